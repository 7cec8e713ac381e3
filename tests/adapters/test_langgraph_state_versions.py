"""A LangGraph checkpoint's ``channel_versions`` are stored once (issue 41): a put whose
versions are the ones the put records leaves them out of its state blob, and a read puts
them back; any other put keeps them in its state, as before."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.hashing import content_digest

THREAD: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


@pytest.fixture(params=["sqlite", "memory"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path
                ) -> AsyncIterator[AsyncEventlogSaver]:
    url = f"sqlite:///{tmp_path / 'log.db'}" if request.param == "sqlite" else "memory://"
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id="t") as opened:
        yield opened


def _checkpoint(number: int, versions: dict[str, Any], values: dict[str, Any]) -> Checkpoint:
    return {**empty_checkpoint(), "id": str(uuid.UUID(int=number)),
            "channel_versions": versions, "channel_values": values,
            "versions_seen": {"agent": dict(versions)}}


async def _stored_state(saver: AsyncEventlogSaver, checkpoint_id: str) -> dict[str, Any]:
    """The state blob of the checkpoint's put, decoded as stored."""
    log = saver.log
    events = [event async for event in log.read_stream("t", "thread:t")]
    put = next(event for event in events if f'"checkpoint_id":"{checkpoint_id}"'.encode()
               in event.data and event.type == "thread_checkpoint_put")
    digest = bytes.fromhex(put.data.split(b'"state_digest":"')[1][:64].decode())
    blob = await log.get_blob("t", digest)
    assert blob is not None
    assert content_digest(blob) == digest
    state: dict[str, Any] = ormsgpack.unpackb(blob)
    return state


async def test_the_versions_are_stored_once_and_read_back(saver: AsyncEventlogSaver) -> None:
    """The state blob holds no ``channel_versions``; ``aget_tuple`` and ``alist`` give
    back the very versions that were put, the unchanged channel's too."""
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    config = await saver.aput(THREAD, _checkpoint(1, {"a": first, "b": first},
                                                  {"a": 1, "b": "x"}), {}, {"a": first, "b": first})
    versions = {"a": second, "b": first}
    config = await saver.aput(config, _checkpoint(2, versions, {"a": 2, "b": "x"}),
                              {}, {"a": second})
    read = await saver.aget_tuple(config)
    assert read is not None
    assert (versions, {"a": 2, "b": "x"}) == (read.checkpoint["channel_versions"],
                                              read.checkpoint["channel_values"])
    assert {"agent": versions} == read.checkpoint["versions_seen"]
    listed = [found.checkpoint["channel_versions"] async for found in saver.alist(THREAD)]
    assert [versions, {"a": first, "b": first}] == listed
    assert "channel_versions" not in await _stored_state(saver, str(uuid.UUID(int=2)))


@pytest.mark.parametrize(("versions", "new", "values"), [
    ({"a": 1}, {"a": 1}, {"a": 5}),  # integer versions (LangGraph's in-memory saver's)
    ({"a": "v2", "b": "v2"}, {"a": "v2", "b": "v2"}, {"a": 5}),  # b emptied: no value
    ({"a": "v2"}, {}, {"a": 5}),  # nothing new: the put stores no value
])
async def test_other_puts_keep_their_versions_in_the_state(
        saver: AsyncEventlogSaver, versions: dict[str, Any], new: dict[str, Any],
        values: dict[str, Any]) -> None:
    """Versions that are not strings, a channel the put records no version for, or a put
    storing no value: the state keeps its ``channel_versions``, read back as they were."""
    if not new:
        await saver.aput(THREAD, _checkpoint(1, versions, values), {}, dict(versions))
    config = await saver.aput(THREAD, _checkpoint(2, versions, values), {}, new)
    read = await saver.aget_tuple(config)
    assert read is not None
    assert versions == read.checkpoint["channel_versions"]
    assert versions == (await _stored_state(saver, str(uuid.UUID(int=2))))["channel_versions"]
