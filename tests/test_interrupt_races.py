"""Real races: several OS processes, each with its own connection, on one batch at once.

PostgreSQL and a SQLite file (the backends several processes share). Every worker opens
its own log, waits at a barrier, then acts; for each of several rounds:

* N workers ``try_claim`` the same batch with a complete answer → exactly one claim,
  every other worker is told ``already_claimed``;
* N workers ``try_start_effect`` holding the current claim or stale ones (released
  generations) → exactly one ``True``, from a current holder, and exactly one dispatch
  marker in the batch's stream.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from eventlog.events import interrupts as ev
from eventlog.interrupts import ClaimRejection, Finish, InterruptClaim, batch_stream
from eventlog.testing.interrupts import PAY, answer, interrupts
from tests.citus import cluster
from tests.conftest import CITUS, PGBOUNCER, BackendTarget, fresh_id, postgres_target

WORKERS = 4
ROUNDS = 5
TIMEOUT = 120

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "postgresql", PGBOUNCER, CITUS])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """A store several processes can open at once."""
    if request.param == "sqlite":
        yield BackendTarget("sqlite", f"sqlite:///{tmp_path / 'race.db'}")
        return
    if request.param == "citus":
        yield from cluster.target()
        return
    yield from postgres_target(request)


# -- the workers (run in spawned processes) -----------------------------------------------


def claim_worker(url: str, options: dict[str, str], scope: str, answers: list[Any],
                 barrier: Any) -> list[tuple[str | None, int | None]]:
    """Open the log, then per round wait for everyone and try to claim."""
    async def run() -> list[tuple[str | None, int | None]]:
        results = []
        async with open_log(url, **options) as log:
            for resume in answers:
                await asyncio.to_thread(barrier.wait, TIMEOUT)
                result = await log.interrupts.try_claim(scope, resume)
                generation = result.claim.generation if result.claim else None
                results.append((result.reason, generation))
        return results

    return asyncio.run(run())


def effect_worker(url: str, options: dict[str, str], claims: list[tuple[Any, ...]],
                  barrier: Any) -> list[bool]:
    """Open the log, then per round wait for everyone and try to start the effect."""
    async def run() -> list[bool]:
        results = []
        async with open_log(url, **options) as log:
            for fields in claims:
                await asyncio.to_thread(barrier.wait, TIMEOUT)
                claim = InterruptClaim(*fields)
                results.append(await log.interrupts.try_start_effect(claim))
        return results

    return asyncio.run(run())


def _fields(claim: InterruptClaim) -> tuple[Any, ...]:
    return (claim.tenant_id, claim.batch_id, claim.generation, claim.expires_at, claim.token)


def _pool_run(function: Any, per_worker_args: list[tuple[Any, ...]]) -> list[Any]:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(len(per_worker_args))
        with context.Pool(len(per_worker_args)) as pool:
            pending = [pool.apply_async(function, (*args, barrier)) for args in per_worker_args]
            return [result.get(TIMEOUT) for result in pending]


# -- the races ----------------------------------------------------------------------------


def test_concurrent_claims_mint_exactly_one(shared: BackendTarget) -> None:
    """N processes answer the same batch at once: one claim, N-1 already_claimed."""
    scope = fresh_id("scope")

    async def setup() -> list[Any]:
        async with open_log(shared.url, **shared.options()) as log:
            batches = [await log.interrupts.create(scope, "t", interrupts("a", "b"), "cp",
                                                   operation=PAY) for _ in range(ROUNDS)]
        return [answer(batch) for batch in batches]

    answers = asyncio.run(setup())
    results = _pool_run(claim_worker,
                        [(shared.url, shared.options(), scope, answers)] * WORKERS)
    per_round = [sorted((str(r[n][0]), r[n][1]) for r in results) for n in range(ROUNDS)]
    expected = sorted([("None", 1)] + [(ClaimRejection.ALREADY_CLAIMED.value, None)]
                      * (WORKERS - 1))
    assert [expected] * ROUNDS == per_round


def test_concurrent_effects_commit_exactly_one_marker(shared: BackendTarget) -> None:
    """Current and stale claim holders race to dispatch: one True, one marker, current."""
    scope = fresh_id("scope")

    async def setup() -> list[list[InterruptClaim]]:
        rounds = []
        async with open_log(shared.url, **shared.options()) as log:
            store = log.interrupts
            for _ in range(ROUNDS):
                batch = await store.create(scope, "t", interrupts(), "cp", operation=PAY)
                held = []
                for _generation in range(3):
                    claim = (await store.try_claim(scope, answer(batch))).claim
                    assert claim is not None
                    held.append(claim)
                    if len(held) < 3:
                        await store.finish(claim, Finish.RELEASE)
                rounds.append(held)
        return rounds

    rounds = asyncio.run(setup())
    # Half the workers hold the current claim, the others one of the released ones.
    per_worker = [
        [_fields(held[2] if worker % 2 == 0 else held[(worker // 2) % 2]) for held in rounds]
        for worker in range(WORKERS)
    ]
    results = _pool_run(effect_worker,
                        [(shared.url, shared.options(), claims) for claims in per_worker])

    async def markers() -> list[int]:
        async with open_log(shared.url, **shared.options()) as log:
            counts = []
            for held in rounds:
                stream = batch_stream(held[0].batch_id)
                events = [e.event async for e in log.read_stream(scope, stream)]
                counts.append(sum(isinstance(e, ev.EffectStarted) for e in events))
            return counts

    winners = [[w for w in range(WORKERS) if results[w][n]] for n in range(ROUNDS)]
    assert [1] * ROUNDS == [len(w) for w in winners]
    assert all(per_worker[w[0]][n][2] == 3 for n, w in enumerate(winners))
    assert [1] * ROUNDS == asyncio.run(markers())
