"""Who did it, for any principal: every valid actor round-trips and is chained; every
string with a control character or line break is refused."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import InvalidInput, open_log
from eventlog.hashing import event_hash
from eventlog.validation import check_actor
from tests.events import Noted
from tests.strategies import actors
from tests.test_actor import ENVELOPE

pytestmark = pytest.mark.properties  # 200 examples each under CI=true: the properties campaign


@given(st.lists(st.one_of(st.none(), actors), min_size=1, max_size=6))
def test_any_actors_round_trip_and_verify(chosen: list[str | None]) -> None:
    """Events appended as any sequence of principals (or none) read back as appended, and
    the log verifies."""
    async def run() -> tuple[list[str | None], bool]:
        async with open_log("memory://") as log:
            for actor in chosen:
                await log.append("t", "s", [Noted(text="x")], actor=actor)
            read = [event.actor async for event in log.read_stream("t", "s")]
            return read, (await log.verify()).ok
    assert (chosen, True) == asyncio.run(run())


@given(actors, actors)
def test_two_actors_hash_apart_and_apart_from_none(first: str, second: str) -> None:
    """Naming an actor always changes the hash; two different actors never hash alike."""
    hashes = {event_hash(**ENVELOPE), event_hash(**ENVELOPE, actor=first),
              event_hash(**ENVELOPE, actor=second)}
    assert (3 if first != second else 2) == len(hashes)


@given(st.text(max_size=20), st.sampled_from(["\x00", "\n", "\x1b", "\x85", "\u2028"]),
       st.text(max_size=20))
def test_a_control_character_anywhere_is_refused(before: str, bad: str, after: str) -> None:
    """Wherever a control character or line break sits, `check_actor` refuses it."""
    with pytest.raises(InvalidInput, match=r"^actor: "):
        check_actor(before + bad + after)
