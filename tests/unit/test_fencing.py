"""The one fenced-decision loop (`eventlog.log.fencing`): its bounds, its waits, and what
a caller sees when the bound is reached."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

from eventlog.errors import InvalidInput, VersionConflict
from eventlog.log.fencing import Retries, decide_fenced, held_after_first


class Racer:
    """A try that loses ``losses`` races (each a distinct, real-looking conflict), then
    returns how many tries it took."""

    def __init__(self, losses: int) -> None:
        self.losses = losses
        self.attempts: list[int] = []

    async def __call__(self, attempt: int) -> int:
        self.attempts.append(attempt)
        if len(self.attempts) <= self.losses:
            raise VersionConflict("s", len(self.attempts), len(self.attempts) + 1)
        return len(self.attempts)


async def test_a_try_that_wins_returns_its_result_at_once() -> None:
    """No lost race: one try, its result."""
    racer = Racer(0)
    assert 1 == await decide_fenced(racer, Retries(attempts=3))
    assert [0] == racer.attempts


async def test_each_lost_race_is_tried_again_with_its_attempt_number() -> None:
    """A try told its attempt number (0 first) is tried again after each lost race."""
    racer = Racer(2)
    assert 3 == await decide_fenced(racer, Retries(attempts=3))
    assert [0, 1, 2] == racer.attempts


async def test_the_last_real_conflict_is_raised_when_the_tries_run_out() -> None:
    """After ``attempts`` lost races the caller sees the conflict the last try met, with
    its facts, not one made up."""
    racer = Racer(10)
    with pytest.raises(VersionConflict) as raised:
        await decide_fenced(racer, Retries(attempts=4))
    assert ("s", 4, 5) == (raised.value.stream_id, raised.value.expected, raised.value.actual)
    assert [0, 1, 2, 3] == racer.attempts


async def test_a_time_bound_stops_the_tries() -> None:
    """With only a time bound, tries go on until it has passed, then the last conflict
    is raised."""
    racer = Racer(10**9)
    with pytest.raises(VersionConflict):
        await decide_fenced(racer, Retries(seconds=0.05, backoff=lambda _n: 0.01))
    assert 2 <= len(racer.attempts) < 100


async def test_retried_is_told_of_each_retry_and_backoff_waits_between_tries() -> None:
    """``retried`` hears of every lost race that is tried again (not of the last), and the
    backoff is asked for each wait."""
    told: list[tuple[int, object]] = []
    waits: list[int] = []

    def backoff(lost: int) -> float:
        waits.append(lost)
        return 0.0

    racer = Racer(2)
    await decide_fenced(racer, Retries(attempts=5, backoff=backoff),
                        lambda lost, conflict: told.append((lost, conflict.expected)))
    assert [(1, 1), (2, 2)] == told
    assert [1, 2] == waits


async def test_other_errors_end_the_loop() -> None:
    """Only a lost race is tried again: any other error goes straight to the caller."""
    attempts: list[int] = []

    async def broken(attempt: int) -> int:
        attempts.append(attempt)
        raise InvalidInput("x", "is wrong")

    with pytest.raises(InvalidInput):
        await decide_fenced(broken, Retries(attempts=5))
    assert [0] == attempts


@pytest.mark.parametrize("kwargs", [{}, {"attempts": 0}, {"seconds": 0.0}])
def test_retries_need_a_positive_bound(kwargs: dict[str, float]) -> None:
    """Retries without a bound, or with one that allows no try, are refused."""
    with pytest.raises(ValueError, match="Retries"):
        Retries(**kwargs)  # type: ignore[arg-type]


class Holder:
    """Records which streams were held."""

    def __init__(self) -> None:
        self.held: list[tuple[str, str]] = []

    def hold_stream(self, tenant_id: str, stream_id: str) -> AbstractAsyncContextManager[None]:
        @asynccontextmanager
        async def hold() -> AsyncIterator[None]:
            self.held.append((tenant_id, stream_id))
            yield

        return hold()


async def test_held_after_first_holds_every_try_but_the_first() -> None:
    """The first try runs as any writer's; every later one inside the stream's hold."""
    holder = Holder()

    async def once(attempt: int) -> int:
        async with held_after_first(holder, "t", "s", attempt):
            await asyncio.sleep(0)
            if attempt < 2:
                raise VersionConflict("s", attempt, attempt + 1)
            return attempt

    assert 2 == await decide_fenced(once, Retries(attempts=5))
    assert [("t", "s"), ("t", "s")] == holder.held
