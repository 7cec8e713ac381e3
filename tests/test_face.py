"""`OpenLog`, what `open_log` yields: the log, and the stores it builds and wires.

The log knows no store; the face owns them and hands each what it needs (the interrupt
store gets the checkpoint store, the adapters the thread store); a sibling face gets
stores of its own that work.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from eventlog import (
    CheckpointRecord,
    EventLog,
    InterruptOptions,
    InterruptStore,
    InvalidInput,
    OpenLog,
    StorageError,
    open_log,
)
from tests.events import Noted


def _record(session: str, checkpoint: str) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="acme", session_id=session, run_id=uuid.uuid4(),
                            checkpoint_id=checkpoint, state={"checkpoint": checkpoint})


async def test_open_log_yields_a_face_over_a_log_that_knows_no_store() -> None:
    """What open_log yields is the log with its stores; the log under it has none."""
    async with open_log("memory://") as log:
        assert isinstance(log, OpenLog)
        assert isinstance(log, EventLog)
        assert type(log.log) is EventLog
        for name in ("checkpoints", "interrupts", "threads", "attach_stores"):
            assert not hasattr(log.log, name), name
        assert log.threads is log.checkpoints.threads
        assert log.interrupts.checkpoints is log.checkpoints


async def test_the_face_is_its_log(tmp_path: Path) -> None:
    """An append through the face is the log's (one head cache, one append path), and
    closing the face closes the log."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.append("acme", "notes", [Noted(text="one")])
        assert (await log.log.stream_head("acme", "notes") or (0, b""))[0] == 1
        await log.log.append("acme", "notes", [Noted(text="two")], expected_version=1)
        assert (await log.stream_head("acme", "notes") or (0, b""))[0] == 2
        assert log.schema_revision == log.log.schema_revision is not None
    with pytest.raises(StorageError, match="closed"):
        await log.log.append("acme", "notes", [Noted(text="three")])


async def test_a_sibling_of_an_opened_log_has_working_stores(tmp_path: Path) -> None:
    """`sibling()` of what open_log gave has stores of its own, over the same log
    (main: "this log has no stores: open it with open_log")."""
    options = InterruptOptions(capacity=3)
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}",
                        interrupt_options=options) as log:
        sibling = log.sibling()
        assert isinstance(sibling, OpenLog)
        assert sibling.checkpoints is not log.checkpoints
        await sibling.checkpoints.create(_record("s-1", "c-1"))
        assert await log.checkpoints.read("acme", "s-1", "c-1") == {"checkpoint": "c-1"}
        assert await sibling.threads.namespaces("acme", "t-1") == []
        assert sibling.interrupts.options is options
        assert sibling.interrupts.checkpoints is sibling.checkpoints


async def test_the_interrupt_store_recovers_through_the_checkpoint_store_it_was_given() -> None:
    """`recover` reads the thread's latest checkpoint from the store handed to the
    interrupt store, not from whatever its log would carry."""
    async with open_log("memory://") as here, open_log("memory://") as there:
        written = await there.checkpoints.create(_record("thread-1", "c-there"))
        store = InterruptStore(here.log, checkpoints=there.checkpoints)
        recovery = await store.recover("acme", "thread-1")
        assert recovery.checkpoint is not None
        assert recovery.checkpoint.checkpoint_id == written.checkpoint_id == "c-there"
        assert (await here.interrupts.recover("acme", "thread-1")).checkpoint is None


async def test_an_interrupt_store_built_alone_has_a_checkpoint_store_over_its_log() -> None:
    """Without ``checkpoints``, the interrupt store reads a checkpoint store over its log."""
    async with open_log("memory://") as log:
        await log.checkpoints.create(_record("thread-1", "c-1"))
        recovery = await InterruptStore(log.log).recover("acme", "thread-1")
        assert recovery.checkpoint is not None
        assert recovery.checkpoint.checkpoint_id == "c-1"


def test_a_face_is_made_of_a_log_only() -> None:
    """Anything else is refused, naming the argument."""
    with pytest.raises(InvalidInput, match="log"):
        OpenLog("memory://")  # type: ignore[arg-type]
