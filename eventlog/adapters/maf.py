"""A Microsoft Agent Framework `CheckpointStorage` on the event log.

``WorkflowBuilder(..., checkpoint_storage=EventlogCheckpointStorage(log, tenant_id="acme"))``
(or ``EventlogCheckpointStorage.from_url("postgresql://…", tenant_id="acme")``) and a
workflow observes nothing different, while every save and delete becomes a hash-chained
event that ``eventlog verify``, ``timeline``, ``replay --as-of`` and ``export`` understand.
Install with ``pip install "checkpoint-eventlog[maf]"``.

How MAF's model maps onto `ThreadCheckpoints` (``log.threads``):

- ``workflow_name`` is a thread of the storage's tenant (root namespace ``""``), so a
  workflow's lineage is one stream that ``eventlog timeline TENANT WORKFLOW`` tells;
  ``checkpoint_id`` is the checkpoint's id, ``previous_checkpoint_id`` its parent and
  ``iteration_count`` its step. A save of an existing id replaces it (the log keeps both).
- The checkpoint is encoded with MAF's own checkpoint encoding (what
  `FileCheckpointStorage` writes: JSON with pickled values for what JSON cannot hold),
  one content-addressed blob per save. Decoding is restricted to MAF's safe types, types
  registered with ``register_checkpoint_type`` and ``allowed_checkpoint_types``, and a
  save that would not load again is refused, as `FileCheckpointStorage` does. Before MAF's
  unpickler sees a stored checkpoint, each pickle in it is walked by our own (which calls
  nothing): one that would make MAF allocate far more than its length
  (``bytearray(2**34)`` in 46 bytes), or a document nested past its depth, is refused with
  `WorkflowCheckpointException` naming the budget (`eventlog.adapters._maf_guard`).
- "Latest" and "oldest first" are log order (the position of each id's latest save),
  never the checkpoint's timestamp: two saves in one clock tick, or a clock stepping
  back, do not change the answer.
- ``load`` and ``delete`` take only an id (MAF gives no workflow name): they look the id
  up within the tenant. Each checkpoint is its own run key, so ``delete`` removes it with
  one tombstone that purges its state blob (``delete_runs``).
- Tenants are walls: a storage reads and writes only its ``tenant_id``.
- Who did it: MAF's storage calls carry no caller, so a save or delete is recorded as
  appended by the principal of an `EventLog.acting_as` block around it (wrap
  ``workflow.run(...)`` in one: a context variable, it reaches the tasks the workflow
  starts), else by the storage's ``actor`` (constructor or ``from_url``), else by the
  log's; none named, none recorded.
- A workflow name that is a LangGraph thread of the tenant is refused at the first save
  with `FrameworkConflict`; lists and ``get_latest`` show only this adapter's checkpoints.
- **One writer per workflow, when asked** (``fenced=True``, as the LangGraph saver's): a
  save whose ``previous_checkpoint_id`` is not the workflow's latest checkpoint (log
  order, what ``get_latest`` returns) is refused with `NotThreadHead` and nothing is
  written: two processes resuming from the same checkpoint cannot both continue it, and a
  late save whose parent was deleted cannot bring it back. A save without a parent (a new
  run's first checkpoint) is accepted and becomes the latest. Decided on the workflow's
  stream version and appended fenced on it (`eventlog.checkpoints.thread_fence`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from agent_framework import WorkflowCheckpoint, WorkflowCheckpointException
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from eventlog.adapters import _spans
from eventlog.adapters._actors import acting, chosen_actor, sealing
from eventlog.adapters._frameworks import MAF, MAF_ENCODING, ThreadClaims
from eventlog.adapters._maf_guard import check_document, read_document
from eventlog.adapters._safe_values import Unreadable
from eventlog.checkpoints.thread_records import Payload, ThreadCheckpoint
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.errors import InvalidInput
from eventlog.face import OpenLog
from eventlog.opening import open_log
from eventlog.telemetry import traced
from eventlog.validation import check_actor, check_id

__all__ = ["ENCODING", "EventlogCheckpointStorage"]

ENCODING = MAF_ENCODING
"""The payload label of a checkpoint in MAF's checkpoint encoding, as JSON bytes."""


class EventlogCheckpointStorage:
    """MAF's `CheckpointStorage` protocol over an open log (`open_log`'s `OpenLog`, the caller
    owns it); it works on the log's thread store (``log.threads``)."""

    def __init__(
        self, log: OpenLog, *, tenant_id: str = "default",
        allowed_checkpoint_types: Sequence[str] | None = None,
        actor: str | None = None, fenced: bool = False, subject: str | None = None,
    ) -> None:
        self.log = log
        # On an encrypted log: the subject every save is sealed under (a customer's id
        # shared by many workflows); None, each workflow is its own subject.
        self.subject = None if subject is None else check_id("subject", subject)
        self.actor = None if actor is None else check_actor(actor)
        self._threads: ThreadCheckpoints = log.threads
        self.tenant_id = check_id("tenant_id", tenant_id)
        self._allowed = frozenset(allowed_checkpoint_types or ())
        self._claims = ThreadClaims(log, self.tenant_id, MAF)
        if not isinstance(fenced, bool):
            raise InvalidInput("fenced", f"must be True or False, not {fenced!r}"[:200])
        self.fenced = fenced

    @classmethod
    @asynccontextmanager
    async def from_url(
        cls, url: str, *, tenant_id: str = "default",
        allowed_checkpoint_types: Sequence[str] | None = None, actor: str | None = None,
        fenced: bool = False, subject: str | None = None,
        **open_log_options: Any,
    ) -> AsyncIterator[EventlogCheckpointStorage]:
        """Open the log at ``url`` (any URL `open_log` takes; ``schema=`` and the other
        options pass through), yield a storage over it (acting as ``actor``), close the
        log on exit."""
        if actor is not None:
            check_actor(actor)
        async with open_log(url, **open_log_options) as log:
            yield cls(log, tenant_id=tenant_id, allowed_checkpoint_types=allowed_checkpoint_types,
                      actor=actor, fenced=fenced, subject=subject)

    @traced("eventlog.agent_framework.save", _spans.maf_checkpoint)
    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Store a snapshot of ``checkpoint`` (replacing an earlier save of its id). Fenced
        (``fenced=True``): `NotThreadHead`, nothing written, unless its parent is the
        workflow's latest checkpoint (or it has none)."""
        state = self._encode(checkpoint)
        await self._claims.check(checkpoint.workflow_name)
        await acting(self.log, self._actor(), sealing(self.log, self.subject, self._threads.put(
            self.tenant_id, checkpoint.workflow_name, checkpoint.checkpoint_id,
            state=state, parent_id=checkpoint.previous_checkpoint_id,
            run_key=checkpoint.checkpoint_id, step=checkpoint.iteration_count,
            metadata={"timestamp": checkpoint.timestamp,
                      "graph_signature_hash": checkpoint.graph_signature_hash},
            fenced=self.fenced, head_by="position",
        )))
        return checkpoint.checkpoint_id

    @traced("eventlog.agent_framework.load", _spans.maf_checkpoint)
    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        """A copy of the checkpoint; `WorkflowCheckpointException` if unknown or deleted."""
        found = await self._find(checkpoint_id)
        if found is not None:
            loaded = await self._threads.get(
                self.tenant_id, found.thread_id, found.checkpoint_id
            )
            if loaded is not None:
                return self._decode(loaded)
        raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id}")

    @traced("eventlog.agent_framework.list_checkpoints", _spans.maf_checkpoint)
    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        """Copies of the workflow's checkpoints, oldest first (by log order)."""
        found = await self._threads.page(self.tenant_id, workflow_name, namespace="")
        return [self._decode(item) for item in _oldest_first(found)]

    @traced("eventlog.agent_framework.list_checkpoint_ids", _spans.maf_checkpoint)
    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        """The workflow's checkpoint ids, oldest first (by log order)."""
        found = await self._threads.page(
            self.tenant_id, workflow_name, namespace="", payloads=False
        )
        return [item.checkpoint_id for item in _oldest_first(found)]

    @traced("eventlog.agent_framework.get_latest", _spans.maf_checkpoint)
    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        """A copy of the workflow's last saved checkpoint (log order), or None."""
        found = await self._threads.page(
            self.tenant_id, workflow_name, namespace="", payloads=False
        )
        for latest in reversed(_oldest_first(found)):  # the next if deleted meanwhile
            loaded = await self._threads.get(self.tenant_id, workflow_name, latest.checkpoint_id)
            if loaded is not None:
                return self._decode(loaded)
        return None

    @traced("eventlog.agent_framework.delete", _spans.maf_checkpoint)
    async def delete(self, checkpoint_id: str) -> bool:
        """Delete the checkpoint with a tombstone that purges its state: True if it was
        there, False if it was unknown (or already deleted)."""
        if await self._find(checkpoint_id) is None:
            return False
        return 0 < await acting(self.log, self._actor(),
                                self._threads.delete_runs(self.tenant_id, [checkpoint_id]))

    # -- helpers -------------------------------------------------------------------------

    def _actor(self) -> str | None:
        return chosen_actor(self.log, None, self.actor, "actor")

    async def _find(self, checkpoint_id: str) -> ThreadCheckpoint | None:
        """The checkpoint with this id in the tenant (its latest save), or None. An id that
        could never have been saved is simply not there."""
        try:  # by run: each of this adapter's checkpoints is saved under its id as run key
            found = await self._threads.of_run(self.tenant_id, checkpoint_id)
        except InvalidInput:
            return None
        mine = [item for item in found
                if item.namespace == "" and item.checkpoint_id == checkpoint_id]
        return max(mine, key=lambda item: item.position) if mine else None

    def _encode(self, checkpoint: WorkflowCheckpoint) -> Payload:
        encoded = encode_checkpoint_value(checkpoint.to_dict())
        try:  # fails now, not at load
            check_document(encoded)
        except Unreadable as error:
            raise WorkflowCheckpointException(
                f"Checkpoint {checkpoint.checkpoint_id} of {checkpoint.workflow_name} would "
                f"not load again: {error}") from error
        decode_checkpoint_value(encoded, allowed_types=self._allowed)
        return Payload(ENCODING, json.dumps(encoded).encode())

    def _decode(self, found: ThreadCheckpoint) -> WorkflowCheckpoint:
        if found.state is None or found.state.encoding != ENCODING:
            raise WorkflowCheckpointException(
                f"Checkpoint {found.checkpoint_id} of {found.thread_id} is not an Agent "
                "Framework checkpoint"
            )
        try:
            document = read_document(found.state.data)
        except Unreadable as error:
            raise WorkflowCheckpointException(
                f"Checkpoint {found.checkpoint_id} of {found.thread_id} is not loaded: "
                f"{error}") from error
        decoded = decode_checkpoint_value(document, allowed_types=self._allowed)
        return WorkflowCheckpoint.from_dict(decoded)


def _oldest_first(found: list[ThreadCheckpoint]) -> list[ThreadCheckpoint]:
    """This adapter's checkpoints (each its own run key; a LangGraph thread of the same
    name keeps its own) in the order of their latest saves."""
    mine = [item for item in found if item.run_key == item.checkpoint_id]
    return sorted(mine, key=lambda item: item.position)
