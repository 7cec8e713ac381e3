"""Contract: a closed log and its stores refuse work."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from eventlog import (
    CheckpointRecord,
    Interrupt,
    Operation,
    Reconciliation,
    Resume,
    ResumeInput,
    StorageError,
)
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted


class LogLifecycleContract(ContractBase):
    """Contract: a closed log and its stores refuse work."""

    async def test_closed_log_refuses_every_call(self, backend: ContractBackend) -> None:
        """After close, every entry point raises StorageError saying the log is closed."""
        async with backend.open() as log:
            await log.append("t", "s", [Noted(text="a")])
        calls: list[Any] = [
            lambda: log.append("t", "s", [Noted(text="b")]),
            lambda: log.read_all(),
            lambda: log.verify(),
            lambda: log.get_blob("t", bytes(32)),
            lambda: anext(log.read_stream("t", "s")),
        ]
        for call in calls:
            with pytest.raises(StorageError, match="closed"):
                await call()

    async def test_a_sibling_reads_the_same_store_and_closes_with_its_log(
        self, backend: ContractBackend
    ) -> None:
        """`EventLog.sibling` sees what its log appended (its own head cache learns the
        stream from the store) and refuses work once that log is closed."""
        async with backend.open() as log:
            await log.append("t", "s", [Noted(text="a")])
            sibling = log.sibling()
            assert 2 == (await sibling.append("t", "s", [Noted(text="b")])).version
            texts = [e.event.text async for e in log.read_stream("t", "s")]  # type: ignore[attr-defined]
            assert ["a", "b"] == texts
        with pytest.raises(StorageError, match="closed"):
            await sibling.append("t", "s", [Noted(text="c")])

    async def test_closed_log_stores_refuse_every_call(self, backend: ContractBackend) -> None:
        """After close, the checkpoint, typed, interrupt and interrupt-admin stores refuse work
        (they read and write through the log, so none answers from a backend left behind)."""
        run = uuid.UUID("00000000-0000-4000-8000-000000000001")
        async with backend.open() as log:
            created = await log.checkpoints.create(
                CheckpointRecord(tenant_id="t", session_id="s", run_id=run, state={"n": 1})
            )
        checkpoint_id = created.checkpoint_id
        assert checkpoint_id is not None
        typed = log.checkpoints.typed(dict)
        answer = ResumeInput(thread_id="s", batch_id="b", responses=[
            Resume(interrupt_id="i", status="resolved", payload={}),
        ])
        calls: list[Any] = [
            lambda: log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=run, state={"n": 2})),
            lambda: log.checkpoints.latest("t", "s"),
            lambda: log.checkpoints.list("t", "s"),
            lambda: log.checkpoints.list_by_run("t", run),
            lambda: log.checkpoints.read("t", "s", checkpoint_id),
            lambda: log.checkpoints.index("t", "s"),
            lambda: log.checkpoints.sessions("t"),
            lambda: log.checkpoints.runs("t", "s"),
            lambda: log.checkpoints.delete("t", "s"),
            lambda: typed.latest("t", "s"),
            lambda: typed.read("t", "s", checkpoint_id),
            lambda: log.interrupts.create(
                "t", "s", [Interrupt(id="i", reason="confirmation")], checkpoint_id,
                operation=Operation("payments", "1"),
            ),
            lambda: log.interrupts.try_claim("t", answer),
            lambda: log.interrupts.recover("t", "s"),
            lambda: log.interrupts.list(["t"]),
            lambda: log.interrupts.inspect(["t"], "b"),
            lambda: log.interrupts.reconcile(
                ["t"], "b", "operator", Reconciliation(resolution="abandoned", evidence={})
            ),
            lambda: log.interrupts.cleanup(),
        ]
        for call in calls:
            with pytest.raises(StorageError, match="closed"):
                await call()
