"""`CheckpointStore`: at-least-once workflow checkpoints over the event log.

Decisions made here (where the contracts we implement were silent):

- **A session is a stream** ``session:<session_id>`` per tenant, so session ids are at most
  247 characters. ``create`` appends one `CheckpointCreated` at the end whatever the
  stream's length (``expected_version=ANY``; the log retries a version race): the contract
  is at-least-once, nothing is deduplicated, and two creates with the same checkpoint id
  are two records (reads answer with the newer).
- **State is a content-addressed blob** attached in the same append: identical states are
  stored once per tenant, however many records carry them. JSON state is stored as its
  msgspec JSON encoding and read back decoded (tuples come back as lists, non-string keys
  as strings); ``bytes`` are stored and returned as they are. NaN and ±Infinity are
  refused (JSON has no spelling for them). The size limit is ``log.max_payload_bytes``.
- **A parent must be a checkpoint of the same tenant and session**, else `InvalidInput`
  naming ``parent_id`` (same message whether it is unknown, deleted, or someone else's).
  The append itself checks it (``require``: the parent's view row must exist as the
  append commits), so a create with a parent is one round trip on PostgreSQL, as one
  without; nothing is written when the parent is not there.
- **Order is log order**, never time: ``list`` and ``latest`` by version in the session,
  ``list_by_run`` by position. Two records written in the same microsecond never tie.
- **The Go package maps onto this store**: ``CreateCheckpoint`` is ``create`` with
  ``parent_id``, ``RetrieveCheckpoint`` is ``read``, ``RetrieveIndex(withParent)`` is
  ``index(parent_id=)``, ``Manager.latest_checkpoint`` is ``latest``, ``Store[T]`` is
  ``typed(T)``; its in-memory manager and file-system JSON store are this store on the
  ``memory://`` and ``file://`` backends. Tracon's five methods keep their names.
- **Reads are unpaged**: ``list``, ``list_by_run`` and ``index`` return whole sessions
  and runs (index scans over the views, state never loaded); ``sessions`` pages.
- **Reads never distinguish absent, deleted and another tenant's**: each is the same
  single view query coming back empty (``read`` then skips the blob read).
- **Delete** reads the stream's version, then the session's rows, and appends a
  `SessionDeleted` tombstone fenced on that version, releasing one blob reference per row
  (so a blob that another session still uses survives). A race with a create is a
  version conflict: it re-reads and decides again. Deleting a session with no
  checkpoints appends nothing and returns 0. The events stay; the chain still verifies.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from eventlog._logging import get_logger
from eventlog.checkpoints import decisions
from eventlog.checkpoints.decisions import EncodedState
from eventlog.checkpoints.records import (
    LATEST_COLUMNS,
    RECORD_COLUMNS,
    CheckpointRecord,
    RunInfo,
    SessionInfo,
    latest_from_row,
    record_from_row,
    run_from_row,
    session_from_row,
)
from eventlog.checkpoints.removal import REMOVAL_RETRIES, StreamRemoval
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.checkpoints.typed import TypedCheckpointStore
from eventlog.errors import CorruptBlob, InvalidInput, VersionConflict
from eventlog.events.checkpoints import SessionCheckpointsRemoved, SessionDeleted
from eventlog.hashing import content_digest
from eventlog.ids import uuid7
from eventlog.log import EventLog
from eventlog.log.fencing import decide_fenced, held_after_first
from eventlog.validation import check_id, check_positive_limit, check_uuid
from projections.checkpoints import CHECKPOINTS, RUNS, SESSIONS
from projections.query import ViewQuery
from projections.views import STREAM_HEADS

if TYPE_CHECKING:
    import uuid

logger = get_logger(__name__)

T = TypeVar("T")


class CheckpointStore:
    """Tenant-scoped workflow checkpoints (``log.checkpoints``); see the module docstring."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._threads: ThreadCheckpoints | None = None

    @property
    def max_state_bytes(self) -> int:
        """The largest state accepted, in encoded bytes: the log's ``max_payload_bytes``."""
        return self._log.max_payload_bytes

    async def create(self, record: CheckpointRecord) -> CheckpointRecord:
        """Append a checkpoint; return it with its id, ``position`` and ``recorded_at``.

        Raises `InvalidInput` (naming the field) for a bad id, ``run_id``, step, metadata,
        state or parent; nothing is written then.
        """
        checked = decisions.check_record(record, self.max_state_bytes)
        state = decisions.encode_state(record.state, self.max_state_bytes)
        return await self.create_encoded(checked, record.state, state, subject=record.subject)

    async def create_encoded(
        self, checked: decisions.CheckedRecord, state: Any, encoded: EncodedState, *,
        subject: str | None = None,
    ) -> CheckpointRecord:
        """Append a validated record whose state is already encoded (the typed layer's way
        in); ``subject`` names the data key of an encrypted log (`CheckpointRecord`)."""
        checkpoint_id = checked.checkpoint_id or str(uuid7())
        if subject is not None:
            check_id("subject", subject)
        event = decisions.created_event(checked, checkpoint_id, encoded, subject)
        result = await self._log.append(
            checked.tenant_id, decisions.session_stream(checked.session_id), [event],
            attach=[encoded.data], require=decisions.parent_required(checked),
            subject=subject,
        )
        logger.debug("created", tenant=checked.tenant_id, session=checked.session_id,
                     checkpoint=checkpoint_id, position=result.positions[0])
        return decisions.written_record(
            checked, checkpoint_id, state, result.positions[0], result.recorded_at
        )

    async def read(self, tenant_id: str, session_id: str, checkpoint_id: str) -> Any:
        """The state of the newest record with this id, or None when there is none here."""
        found = await self.read_encoded(tenant_id, session_id, checkpoint_id)
        return None if found is None else decisions.decode_state(found.encoding, found.data)

    async def read_encoded(
        self, tenant_id: str, session_id: str, checkpoint_id: str
    ) -> EncodedState | None:
        """The stored blob of the newest record with this id: one view query that reads the
        row with its blob (`CorruptBlob` when the blob's bytes do not hash to its digest)."""
        _check_session(tenant_id, session_id)
        check_id("checkpoint_id", checkpoint_id)
        rows = await self._log.query(ViewQuery(
            CHECKPOINTS,
            {"tenant_id": tenant_id, "session_id": session_id, "checkpoint_id": checkpoint_id},
            # The id in the order too: the session's primary key, ordered by version
            # alone, walked the session newest first filtering by id on PostgreSQL
            # (docs/decisions/storage.md, "Reads that take their index whatever the
            # statistics say").
            order_by=("checkpoint_id", "version"), descending=True, limit=1,
            columns=("state_digest", "state_encoding"), with_blob="state_digest",
        ))
        if not rows or rows[0]["blob"] is None:
            return None
        digest, data = rows[0]["state_digest"], rows[0]["blob"]
        # An encrypted log checked the sealed bytes against their address as it opened them.
        if self._log.sealer is None and content_digest(data) != digest:
            raise CorruptBlob(digest)
        return EncodedState(rows[0]["state_encoding"], data)

    async def list(self, tenant_id: str, session_id: str) -> builtins.list[CheckpointRecord]:
        """Every record of the session since its last delete, oldest first; state not read."""
        _check_session(tenant_id, session_id)
        return await self._records(tenant_id, {"session_id": session_id}, "version")

    async def list_by_run(
        self, tenant_id: str, run_id: uuid.UUID | str
    ) -> builtins.list[CheckpointRecord]:
        """Every record one run wrote, oldest first; state not read."""
        check_id("tenant_id", tenant_id)
        run = check_uuid("run_id", run_id)
        return await self._records(tenant_id, {"run_id": run}, "position")

    async def latest(self, tenant_id: str, session_id: str) -> CheckpointRecord | None:
        """The session's most recently written record (by log order), or None."""
        _check_session(tenant_id, session_id)
        rows = await self._log.query(ViewQuery(
            SESSIONS, {"tenant_id": tenant_id, "session_id": session_id},
            columns=LATEST_COLUMNS,
        ))
        return latest_from_row(tenant_id, rows[0]) if rows else None

    async def index(
        self, tenant_id: str, session_id: str, parent_id: str | None = None
    ) -> builtins.list[CheckpointRecord]:
        """The session's records in order; with ``parent_id``, only that checkpoint's children."""
        _check_session(tenant_id, session_id)
        if parent_id is None:
            return await self.list(tenant_id, session_id)
        check_id("parent_id", parent_id)
        where = {"session_id": session_id, "parent_id": parent_id}
        return await self._records(tenant_id, where, "version")

    async def delete(self, tenant_id: str, session_id: str) -> int:
        """Delete the session's checkpoints from the views and purge their unshared state.

        Returns how many records were removed (0 when there were none; nothing is appended
        then). The first try decides and appends as any writer does; after a lost race it
        backs off and decides again holding the session's stream (`EventLog.hold_stream`),
        so creates racing from other processes cannot starve it. Raises `VersionConflict`
        only after `REMOVAL_TIMEOUT_S` seconds of lost races.
        """
        _check_session(tenant_id, session_id)
        stream = decisions.session_stream(session_id)

        async def once(attempt: int) -> int:
            async with held_after_first(self._log, tenant_id, stream, attempt):
                return await self._delete_once(tenant_id, session_id)

        def retried(attempt: int, _conflict: VersionConflict) -> None:
            logger.debug("removal_retried", tenant=tenant_id, session=session_id,
                         attempt=attempt)

        return await decide_fenced(once, REMOVAL_RETRIES, retried)

    async def _delete_once(self, tenant_id: str, session_id: str) -> int:
        """Decide against the views and append the tombstone fenced on what was read.

        The stream version is read before the rows: a create committing in between shows
        up in the rows, and then the fenced append fails and the caller decides again.
        """
        stream = decisions.session_stream(session_id)
        version = await self._stream_version(tenant_id, stream)
        rows = await self._log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": tenant_id, "session_id": session_id},
            columns=("state_digest",),
        ))
        plan = decisions.plan_delete(row["state_digest"] for row in rows)
        if plan.count == 0:
            return 0
        tombstone = SessionDeleted(
            session_id=session_id, checkpoints=plan.count,
            released={digest.hex(): count for digest, count in sorted(plan.releases.items())})
        await self._log.append(
            tenant_id, stream, [tombstone], expected_version=version, release=plan.releases
        )
        logger.info("deleted", tenant=tenant_id, session=session_id, checkpoints=plan.count)
        return plan.count

    async def removal_plan(
        self, tenant_id: str, session_id: str,
        select: Callable[[builtins.list[dict[str, Any]]], builtins.list[int]], reason: str,
    ) -> StreamRemoval | None:
        """The tombstone removing the session's records whose versions ``select`` picks
        from its rows (version, checkpoint id, run, recorded time, subject, oldest first), decided
        and not appended: the caller appends it fenced on its ``expected_version`` (read
        before the rows, so a create in between makes that append conflict). A pick that
        leaves records must leave the latest (the sessions view keeps its row); a pick
        of every record empties the session. None when nothing is picked."""
        _check_session(tenant_id, session_id)
        stream = decisions.session_stream(session_id)
        version = await self._stream_version(tenant_id, stream)
        rows = await self._log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": tenant_id, "session_id": session_id},
            order_by=("version",),
            columns=("version", "checkpoint_id", "run_id", "recorded_at", "state_digest",
                     "subject"),
        ))
        picked = set(select(rows))
        gone = [row for row in rows if row["version"] in picked]
        if not gone:
            return None
        kept = [row for row in rows if row["version"] not in picked]
        if kept and kept[-1] is not rows[-1]:
            raise InvalidInput("select", "must keep the session's latest record when it "
                                         "keeps any")
        releases = decisions.plan_delete(row["state_digest"] for row in gone).releases
        kept_runs = {row["run_id"] for row in kept}
        event = SessionCheckpointsRemoved(
            session_id=session_id, reason=reason, versions=[row["version"] for row in gone],
            checkpoint_ids=[row["checkpoint_id"] for row in gone],
            runs=sorted({row["run_id"] for row in gone} - kept_runs, key=str),
            emptied=not kept,
            released={digest.hex(): count for digest, count in sorted(releases.items())},
        )
        return StreamRemoval(stream, version, event, releases,
                             [row["checkpoint_id"] for row in gone], emptied=not kept)

    async def sessions(
        self, tenant_id: str, *, after: str | None = None, limit: int = 100
    ) -> builtins.list[SessionInfo]:
        """A page of the tenant's sessions that have checkpoints, by session id after ``after``."""
        check_id("tenant_id", tenant_id)
        check_positive_limit("limit", limit, maximum=10_000)
        if after is not None:
            check_id("after", after)
        rows = await self._log.query(ViewQuery(
            SESSIONS, {"tenant_id": tenant_id}, order_by=("session_id",),
            after=None if after is None else (after,), limit=limit,
        ))
        return [session_from_row(row) for row in rows]

    async def runs(self, tenant_id: str, session_id: str) -> builtins.list[RunInfo]:
        """The session's runs in the order they started, each with its first checkpoint."""
        _check_session(tenant_id, session_id)
        rows = await self._log.query(ViewQuery(
            RUNS, {"tenant_id": tenant_id, "session_id": session_id},
            order_by=("first_version",),
        ))
        return [run_from_row(row) for row in rows]

    @property
    def threads(self) -> ThreadCheckpoints:
        """Checkpoints addressed by id in threads and namespaces (what LangGraph needs)."""
        if self._threads is None:
            self._threads = ThreadCheckpoints(self._log)
        return self._threads

    def typed(self, state_type: type[T]) -> TypedCheckpointStore[T]:
        """This store with states of one type (the Go ``Store[T]``): create takes a ``T``,
        read returns a decoded ``T``. ``state_type`` is anything msgspec can decode into."""
        return TypedCheckpointStore(self, state_type)

    # -- view reads ----------------------------------------------------------------------

    async def _records(
        self, tenant_id: str, where: dict[str, Any], order: str
    ) -> builtins.list[CheckpointRecord]:
        rows = await self._log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": tenant_id, **where}, order_by=(order,),
            columns=RECORD_COLUMNS,
        ))
        return [record_from_row(tenant_id, row) for row in rows]

    async def _stream_version(self, tenant_id: str, stream_id: str) -> int:
        rows = await self._log.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": tenant_id, "stream_id": stream_id},
            columns=("version",),
        ))
        return int(rows[0]["version"]) if rows else 0


def _check_session(tenant_id: str, session_id: str) -> None:
    check_id("tenant_id", tenant_id)
    decisions.check_session_id(session_id)
