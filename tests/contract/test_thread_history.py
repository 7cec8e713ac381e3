"""Contract: `ThreadCheckpoints.history`, the walk LangGraph's `DeltaChannel` replays, on
every backend: only the checkpoint's own ancestors count, each channel stops at its
nearest stored value, a parent that is not older ends the walk, tenants are walls. The
sealed campaign runs it on encrypted SQLite and PostgreSQL too: each value read opened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import EventLog, InvalidInput
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from tests.conftest import BACKENDS, PGBOUNCER, SEALED_POSTGRESQL, SEALED_SQLITE, BackendTarget
from tests.conftest import target as any_target

T = "acme"


@pytest.fixture(params=[*BACKENDS, PGBOUNCER, SEALED_SQLITE, SEALED_POSTGRESQL])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """Every backend, and encrypted SQLite and PostgreSQL under ``-m sealed``."""
    yield from any_target.__wrapped__(request, tmp_path)  # type: ignore[attr-defined]


def _value(text: str) -> Payload:
    return Payload("json", text.encode())


async def _put(log: EventLog, checkpoint_id: str, parent: str | None,
               channels: dict[str, ChannelValue] | None = None, thread: str = "t") -> None:
    store = log.checkpoints.threads
    await store.put(T, thread, checkpoint_id, state=_value("{}"), parent_id=parent,
                    channels=channels or {})
    await store.put_writes(T, thread, checkpoint_id, "task",
                           [(0, "m", _value(f'"{checkpoint_id}"')),
                            (1, "n", _value(f'"{checkpoint_id}-n"'))])


def _writes(history: object) -> list[str]:
    return [write.value.data.decode() for write in history.writes]  # type: ignore[attr-defined]


async def test_history_follows_the_parents_and_stops_at_each_seed(log: EventLog) -> None:
    """c1 stores m; c3 stores n; a fork c2b off c2 is not on c4's path. At c4: m has c1's
    value and the writes of c1, c2, c3; n has c3's value and c3's writes only."""
    await _put(log, "c1", None, {"m": ChannelValue("1", _value('["seed-m"]'))})
    await _put(log, "c2", "c1")
    await _put(log, "c2b", "c2")
    await _put(log, "c3", "c2", {"n": ChannelValue("1", _value('["seed-n"]')),
                                 "m": ChannelValue("9")})
    await _put(log, "c4", "c3")
    found = await log.checkpoints.threads.history(T, "t", "c4", ["m", "n", "absent"])
    assert ['"c1"', '"c2"', '"c3"'] == _writes(found["m"])
    assert found["m"].seed == _value('["seed-m"]')
    assert ['"c3-n"'] == _writes(found["n"])
    assert found["n"].seed == _value('["seed-n"]')
    assert ['"c1"', '"c2"', '"c3"'][:0] == _writes(found["absent"])
    assert None is found["absent"].seed


async def test_a_parent_that_is_not_older_ends_the_walk(log: EventLog) -> None:
    """b's parent is c (a newer id) and c's is b: the walk from c reads b and stops."""
    await _put(log, "b", "c")
    await _put(log, "c", "b")
    found = await log.checkpoints.threads.history(T, "t", "c", ["m"])
    assert ['"b"'] == _writes(found["m"])


async def test_history_is_the_tenants_and_the_namespaces(log: EventLog) -> None:
    """Another tenant and another namespace see nothing of the thread."""
    await _put(log, "c1", None)
    await _put(log, "c2", "c1")
    store = log.checkpoints.threads
    assert ['"c1"'] == _writes((await store.history(T, "t", "c2", ["m"]))["m"])
    assert [] == (await store.history("other", "t", "c2", ["m"]))["m"].writes
    assert [] == (await store.history(T, "t", "c2", ["m"], namespace="x"))["m"].writes


async def test_many_channels_and_bad_input(log: EventLog) -> None:
    """70 channels (more than one statement's mask) all answer; a bad name is refused."""
    await _put(log, "c1", None)
    await _put(log, "c2", "c1")
    store = log.checkpoints.threads
    names = ["m", *(f"ch{n}" for n in range(69))]
    found = await store.history(T, "t", "c2", names)
    assert names == list(found)
    assert ['"c1"'] == _writes(found["m"])
    assert {} == await store.history(T, "t", "c2", [])
    with pytest.raises(InvalidInput, match="channel"):
        await store.history(T, "t", "c2", [""])
    with pytest.raises(InvalidInput, match="tenant_id"):
        await store.history("", "t", "c2", ["m"])
