"""`ThreadCheckpoints` (``log.checkpoints.threads``): checkpoints addressed by id.

What frameworks such as LangGraph need and sessions do not give: a thread holds
checkpoints in several namespaces, each addressed by a caller-chosen id; a put of an id
that exists *is* that checkpoint again (the views keep one row per id, the log keeps
every put); "latest" is the highest id in a namespace, never the last write; pending
writes hang off a checkpoint. Decisions made here:

- **A thread is the stream** ``thread:<thread_id>``, so thread ids are at most 248
  characters; namespaces, run keys and task paths are free text up to 16,384 characters
  (LangGraph builds them from nested ``node:task_id`` parts).
- **Payloads are content-addressed blobs**: the checkpoint's own state (one per put) and
  each channel value, stored once per (namespace, channel, version) by the put that
  carries it; later checkpoints name the version (`ChannelValue` without a value), so an
  unchanged channel is never stored again. Each put, stored value and write holds one
  reference per payload, and a removal releases exactly those of what it removes: the
  checkpoints, their writes, and the values no remaining checkpoint carries. What they
  hold is folded from the thread's own events at removal (`ThreadHoldings`), not kept
  in tables every put would write (issue 41; migration 0025).
- **Puts and writes append without a fence** (``ANY``) and read nothing: every put and
  every write holds its own blob references (in its event), so what the views keep
  (one row per id, the first write per index) needs no decision. **Deletes, removals**
  decide from the views and the stream, so they read the stream version first and
  append fenced on it.
  After a lost race they back off (full jitter) and decide again *holding* the thread's
  stream (`EventLog.hold_stream`: no other process's put commits meanwhile), so a
  delete under a stream of puts completes instead of losing every race; they give up
  (`VersionConflict`) only after `REMOVAL_TIMEOUT_S` seconds.
- **Fenced puts and writes, when asked** (``fenced=True``: single-writer threads) are
  appended only if based on the namespace's head, decided and appended atomically:
  `eventlog.checkpoints.thread_fence`.
- **One tombstone per thread**: deleting a thread (every namespace), deleting runs and
  pruning each append one event per affected thread that releases the blobs it orphans.
- **A copy** appends `ThreadCopied` and then every checkpoint and write of the source as
  ordinary puts, in one append to the target thread.
- **An adoption** (checkpoints taken in from another store: LangGraph's savers, Agent
  Framework's file store) appends `ThreadAdopted` (the source, each checkpoint's original
  time) and then the checkpoints and writes as ordinary puts, in one append fenced on the
  version the adopter read, so two adoptions of one thread never both add a checkpoint.
- **Reads are one statement on PostgreSQL**: a checkpoint or a page is one view query
  that reads each row's state blob, the channel values it names (by key) and its
  writes with it (`projections.query.Related`); other backends read the values and
  writes after it by key, in chunks of 500 keys, however many rows the page has.
"""

from __future__ import annotations

import asyncio
import builtins
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import msgspec

from eventlog._logging import get_logger
from eventlog.checkpoints import element_copies, elements
from eventlog.checkpoints import thread_decisions as decide
from eventlog.checkpoints.decisions import normalise_metadata
from eventlog.checkpoints.holdings import HoldingsCache
from eventlog.checkpoints.removal import REMOVAL_RETRIES, StreamRemoval
from eventlog.checkpoints.thread_fence import HEAD_ORDERS, ThreadFence
from eventlog.checkpoints.thread_records import (
    Adoption,
    AdoptionBase,
    ChannelHistory,
    ChannelValue,
    Elements,
    Payload,
    ThreadCheckpoint,
    ThreadWrite,
)
from eventlog.checkpoints.write_batches import WriteBatches
from eventlog.errors import BlobMissing, InvalidInput, VersionConflict
from eventlog.events import Event
from eventlog.events.threads import (
    AdoptedCheckpoint,
    BlobRef,
    CheckpointKey,
    ThreadAdopted,
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadCopied,
    ThreadDeleted,
    ThreadWritesPut,
    ValueKey,
    WriteRef,
)
from eventlog.hashing import content_digest
from eventlog.log import EventLog
from eventlog.log.fencing import Retried, decide_fenced, held_after_first
from eventlog.records import AppendResult
from eventlog.validation import check_id, check_positive_limit
from projections.query import MAX_GUESSED_BLOBS, JsonContains, Related, ViewQuery
from projections.thread_history import HistoryQuery, HistoryRow
from projections.thread_holdings import ThreadHoldings
from projections.threads import THREAD_CHECKPOINTS, THREAD_VALUES, THREAD_WRITES
from projections.views import STREAM_HEADS

logger = get_logger(__name__)

_CHUNK = 500
_GUESSED_THREADS = 1024
"""Threads whose latest list elements a store remembers (`ThreadCheckpoints._guess`)."""
_HISTORY_CHANNELS = 62
"""Channels per history statement (each a bit of a 64-bit mask)."""
_versions = msgspec.json.Decoder(dict[str, str])
_metadata = msgspec.json.Decoder(dict[str, Any])
Selection = Callable[[builtins.list[dict[str, Any]]], builtins.list[CheckpointKey]]
"""Which of a thread's checkpoint rows a removal removes (by key)."""
_PAYLOADS = (
    Related("values", THREAD_VALUES, on=("thread_id", "namespace"),
            columns=("channel", "encoding"), pairs=("channel", "channel_version"),
            pairs_from="channels", with_blob="digest"),
    Related("writes", THREAD_WRITES, on=("thread_id", "namespace", "checkpoint_id"),
            columns=("task_id", "idx", "channel", "task_path", "encoding"),
            with_blob="digest"),
)
"""What a checkpoint read with its payloads reads with each row: the channel values its
``channels`` name, by key, and its pending writes; on PostgreSQL in the same statement."""
_IN_NAMESPACE = ("namespace", "checkpoint_id")
_IN_THREAD = ("thread_id", "checkpoint_id")
_IN_TENANT = ("tenant_id", "checkpoint_id")
"""The orders of a read of one namespace of a thread, of a thread across its namespaces,
and of a whole tenant: newest first by id, each naming the column its equality fixes
just before the id, so the read takes the index of exactly those columns (the primary
key, ``thread_checkpoints_by_thread``; across namespaces, a merge of the primary key's
main namespace and that index's other namespaces: `ViewQuery.split`) whatever
PostgreSQL's statistics say (docs/decisions/storage.md, "Reads that take their index
whatever the statistics say"). A whole tenant's page has
no index led by the id (migration 0029 dropped the one there was): it sorts the tenant's
rows."""
_BY_RUN = ("run_key", "tenant_id")
"""A run's checkpoints in the order of ``thread_checkpoints_by_run``, which this names so
that the read takes it (on SQLite without statistics it read the tenant's rows by the
primary key)."""
_SPLIT = ("namespace", "thread_checkpoints_by_thread")
"""A page across a thread's namespaces: the main graph's by the primary key, the
subgraphs' by their partial index (`ViewQuery.split`, migration 0027)."""
_ROW_COLUMNS = (
    "thread_id", "namespace", "checkpoint_id", "parent_id", "run_key", "step", "metadata",
    "position", "recorded_at", "state_encoding", "state_digest", "channels",
)


def runs_query(tenant_id: str, run_key: str) -> ViewQuery:
    """The threads of the checkpoints of one run (what `ThreadCheckpoints.delete_runs`
    reads first, run by run): by ``thread_checkpoints_by_run``, whose rows all have a run
    key (migration 0031). One equality a run, not ``run_key = ANY(...)``: PostgreSQL
    proves ``IS NOT NULL`` from an equality, never from an array parameter that may be
    empty, and on tables never analyzed read the tenant's rows by the primary key
    instead (tests/test_read_plans_without_statistics.py)."""
    return ViewQuery(THREAD_CHECKPOINTS, {"tenant_id": tenant_id, "run_key": run_key},
                     columns=("thread_id",))


class ThreadCheckpoints:
    """Thread checkpoints of every tenant over one log; see the module docstring."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._fence = ThreadFence(log, self._lock)
        self._elements = elements.ElementPlanner()
        self._manifests = elements.ManifestCache()
        self._holdings = HoldingsCache(log)
        self._writes = WriteBatches(log, self._lock, decide.thread_stream)
        # What each thread's latest list values held when this store put them: a read of
        # the latest checkpoint asks for those elements in its own statement (`_guess`).
        self._guesses: OrderedDict[tuple[str, str, str],
                                   dict[str, tuple[tuple[str, bytes], ...]]] = (
            OrderedDict())

    async def put(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_id: str,
        *,
        state: Payload,
        namespace: str = "",
        channels: Mapping[str, Payload | ChannelValue | Elements] | None = None,
        parent_id: str | None = None,
        run_key: str | None = None,
        step: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        fenced: bool = False,
        head_by: str = "id",
    ) -> int:
        """Put a checkpoint (replacing an earlier put of the same id); return its position.

        ``fenced``: only if ``parent_id`` is the namespace's head (see `thread_fence`),
        else `NotThreadHead` and nothing is written. ``head_by``: what makes the head of a
        fenced put, ``"id"`` (the highest checkpoint id, LangGraph's) or ``"position"``
        (the last put in log order, Agent Framework's)."""
        if head_by not in HEAD_ORDERS:
            raise InvalidInput("head_by", f"must be one of {', '.join(HEAD_ORDERS)}, not "
                                          f"{head_by!r}"[:200])
        check_id("tenant_id", tenant_id)
        try:
            result = await self._put_once(tenant_id, thread_id, checkpoint_id, state=state,
                                          namespace=namespace, channels=channels or {},
                                          parent_id=parent_id, run_key=run_key, step=step,
                                          metadata=metadata or {}, fenced=fenced, deltas=True,
                                          head_by=head_by)
        except InvalidInput as error:
            if not elements.is_base_refusal(error):
                raise
            # A base this store remembered was removed meanwhile: store in full.
            self._elements.forget(tenant_id, thread_id)
            result = await self._put_once(tenant_id, thread_id, checkpoint_id, state=state,
                                          namespace=namespace, channels=channels or {},
                                          parent_id=parent_id, run_key=run_key, step=step,
                                          metadata=metadata or {}, fenced=fenced, deltas=False,
                                          head_by=head_by)
        logger.debug("put", tenant=tenant_id, thread=thread_id, checkpoint=checkpoint_id,
                     position=result.positions[0])
        return result.positions[0]

    async def _put_once(
        self, tenant_id: str, thread_id: str, checkpoint_id: str, *, state: Payload,
        namespace: str, channels: Mapping[str, Payload | ChannelValue | Elements],
        parent_id: str | None, run_key: str | None, step: int | None,
        metadata: Mapping[str, Any], fenced: bool, deltas: bool, head_by: str = "id",
    ) -> AppendResult:
        """One try of `put`: values given as `Elements` planned as manifests (deltas on
        what this store last put, when ``deltas``), the put decided and appended."""
        address = await self._addresses(tenant_id, thread_id, channels.values())
        plan, remember = self._elements.plan(tenant_id, thread_id, namespace, channels,
                                             deltas=deltas, address=address)
        event, attach = decide.put_event(
            thread_id=thread_id, namespace=namespace, checkpoint_id=checkpoint_id,
            parent_id=parent_id, run_key=run_key, step=step, state=state,
            channels=plan.channels, metadata=metadata,
            max_bytes=self._log.max_payload_bytes,
        )
        event, attach = plan.apply(event, attach)
        subject = self._log.sealing_subject
        if subject is not None and subject != thread_id:
            # Named on the record (an adapter's subject=): holds and retention by subject see it.
            event = msgspec.structs.replace(event, subject=subject)
        if fenced:
            result = await self._fence.append(tenant_id, event, attach, plan.require,
                                              head_by=head_by)
        else:
            async with self._lock(tenant_id, thread_id):
                result = await self._log.append(
                    tenant_id, decide.thread_stream(thread_id), [event], attach=attach,
                    require=plan.require,
                )
        remember()
        self._manifests.put_plan(tenant_id, plan, address)
        self._keep_guess(tenant_id, thread_id, namespace, plan)
        return result

    async def _addresses(self, tenant_id: str, thread_id: str, values: Iterable[object]
                         ) -> elements.Address:
        """What manifests name a thread's blobs by: their sealed addresses on an encrypted
        log (a manifest is sealed whole: `EventLog.blob_addresses`), else their digests."""
        decide.check_thread_id(thread_id)
        if self._log.sealer is None or not any(
                isinstance(getattr(value, "value", value), Elements) for value in values):
            return content_digest
        return await self._log.blob_addresses(tenant_id, decide.thread_stream(thread_id))

    async def put_writes(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_id: str,
        task_id: str,
        writes: Sequence[tuple[int, str, Payload | Elements]],
        *,
        namespace: str = "",
        task_path: str = "",
        fenced: bool = False,
    ) -> int:
        """Attach a task's ``(idx, channel, value)`` writes to a checkpoint; return how many
        were appended. The views keep the first write per (task, idx ≥ 0) and the last per
        negative (special) idx; every appended write holds its payload until its checkpoint
        or thread is removed, so nothing needs deciding here and nothing is read. Writes of
        several tasks that wait for the thread at once are appended together, as one
        append of several events (`eventlog.checkpoints.write_batches`).

        ``fenced``: only if the checkpoint is the namespace's head or after it, and was not
        removed (see `thread_fence`), else `NotThreadHead` and nothing is written."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        check_id("checkpoint_id", checkpoint_id)
        check_id("task_id", task_id)
        decide.check_key("namespace", namespace)
        decide.check_path("task_path", task_path)
        address = await self._addresses(tenant_id, thread_id, (value for _, _, value in writes))
        plan = decide.plan_writes(writes, self._log.max_payload_bytes, address)
        if not plan.writes:
            return 0
        event = ThreadWritesPut(
            thread_id=thread_id, namespace=namespace, checkpoint_id=checkpoint_id,
            task_id=task_id, task_path=task_path, writes=plan.writes,
        )
        if fenced:
            await self._fence.append(tenant_id, event, plan.attach)
            return len(plan.writes)
        await self._writes.append(tenant_id, thread_id, event, plan.attach)
        return len(plan.writes)

    async def get(
        self, tenant_id: str, thread_id: str, checkpoint_id: str | None = None, *,
        namespace: str = "",
    ) -> ThreadCheckpoint | None:
        """One checkpoint with its state, channels and writes: the given id, else the one
        with the highest id in the namespace; None when there is none here."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        decide.check_key("namespace", namespace)
        where: dict[str, Any] = {
            "tenant_id": tenant_id, "thread_id": thread_id, "namespace": namespace,
        }
        if checkpoint_id is not None:
            where["checkpoint_id"] = check_id("checkpoint_id", checkpoint_id)
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, where, order_by=_IN_NAMESPACE, descending=True,
            limit=1, columns=_ROW_COLUMNS, with_blob="state_digest", related=_PAYLOADS,
            blobs=() if checkpoint_id is not None else self._guess(
                tenant_id, thread_id, namespace),
        ))
        found = await self._complete(tenant_id, rows)
        return found[0] if found else None

    def _keep_guess(self, tenant_id: str, thread_id: str, namespace: str,
                    plan: elements.Plan) -> None:
        """Remember the elements of each list value an appended put stored."""
        if not plan.elements or self._log.sealer is not None:
            return
        key = (tenant_id, thread_id, namespace)
        kept = self._guesses.pop(key, {})
        # The plan's own (encoding, digest) items, kept as they are: a put of a list of n
        # elements took n steps more to copy their digests out, while a read that guesses
        # (`_guess`) is rarer than a put.
        kept.update(plan.elements)
        self._guesses[key] = kept
        if len(self._guesses) > _GUESSED_THREADS:
            self._guesses.popitem(last=False)

    def _guess(self, tenant_id: str, thread_id: str, namespace: str) -> tuple[bytes, ...]:
        """The elements the thread's latest checkpoint most likely holds: those of the
        list values this store last put for it (none known: none). Read in the
        checkpoint's own statement where the backend can (PostgreSQL), they spare the
        read of its elements a second statement; an element not guessed is read after,
        as before, and a guess the checkpoint does not hold costs only its bytes."""
        kept = self._guesses.get((tenant_id, thread_id, namespace))
        if not kept:
            return ()
        self._guesses.move_to_end((tenant_id, thread_id, namespace))
        guessed = tuple(dict.fromkeys(digest for items in kept.values()
                                      for _, digest in items))
        return guessed if len(guessed) <= MAX_GUESSED_BLOBS else ()

    async def history(
        self, tenant_id: str, thread_id: str, checkpoint_id: str,
        channels: Sequence[str], *, namespace: str = "",
    ) -> dict[str, ChannelHistory]:
        """Per channel, what its value at the checkpoint is rebuilt from by replaying
        writes (LangGraph's ``DeltaChannel``): see `ChannelHistory`. Walks the
        checkpoint's parents (not its own writes), each channel until an ancestor stores
        a value of it, in one statement on SQL backends however long the walk. A
        checkpoint that is not here has an empty history; a write or value whose blob is
        gone is left out, as `get` leaves it out."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        decide.check_key("namespace", namespace)
        check_id("checkpoint_id", checkpoint_id)
        wanted = tuple(dict.fromkeys(decide.check_key("channel", name, empty=False,
                                                       limit=decide.MAX_CHANNEL_BYTES)
                                      for name in channels))
        if not wanted:
            return {}
        rows: builtins.list[HistoryRow] = []
        for start in range(0, len(wanted), _HISTORY_CHANNELS):
            rows += await self._log.history(HistoryQuery(
                tenant_id, thread_id, namespace, checkpoint_id,
                wanted[start:start + _HISTORY_CHANNELS]))
        return _histories(wanted, rows, await self._resolved(tenant_id, rows))

    async def page(
        self,
        tenant_id: str,
        thread_id: str | None = None,
        *,
        namespace: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        limit: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        payloads: bool = True,
    ) -> builtins.list[ThreadCheckpoint]:
        """Checkpoints newest first (by id): of one thread (and namespace, and id) or of the
        whole tenant, with ids below ``before``, whose metadata contains ``metadata``. With
        ``payloads=False`` state, channels and writes are not read."""
        check_id("tenant_id", tenant_id)
        where: dict[str, Any] = {"tenant_id": tenant_id}
        if thread_id is not None:
            where["thread_id"] = decide.check_thread_id(thread_id)
        if namespace is not None:
            where["namespace"] = decide.check_key("namespace", namespace)
        if checkpoint_id is not None:
            where["checkpoint_id"] = check_id("checkpoint_id", checkpoint_id)
        if metadata:
            where["metadata"] = JsonContains(
                normalise_metadata(metadata, self._log.max_payload_bytes)
            )
        if limit is not None:
            check_positive_limit("limit", limit)
        order = (_IN_NAMESPACE if thread_id is not None and namespace is not None
                 else _IN_THREAD if thread_id is not None else _IN_TENANT)
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, where, order_by=order, descending=True,
            after=None if before is None else (
                *(where[name] for name in order[:-1]), check_id("before", before)),
            limit=limit,
            columns=_ROW_COLUMNS, with_blob="state_digest" if payloads else None,
            related=_PAYLOADS if payloads else (),
            split=_SPLIT if order is _IN_THREAD else None,
        ))
        if not payloads:
            return [_checkpoint(tenant_id, row) for row in rows]
        return await self._complete(tenant_id, rows)

    async def find(self, tenant_id: str, checkpoint_id: str) -> builtins.list[ThreadCheckpoint]:
        """Every checkpoint of the tenant with this id, in any thread (payloads not read).

        A search, not a lookup: no index leads with the checkpoint id (a put would write an
        entry into it that no hot read uses: migration 0029), so it reads the tenant's
        checkpoint rows. A checkpoint saved under a run key of its own is found by
        `of_run` through the run index (Agent Framework's load by id)."""
        check_id("tenant_id", tenant_id)
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS,
            {"tenant_id": tenant_id, "checkpoint_id": check_id("checkpoint_id", checkpoint_id)},
            order_by=("thread_id", "namespace"), columns=_ROW_COLUMNS,
        ))
        return [_checkpoint(tenant_id, row) for row in rows]

    async def of_run(self, tenant_id: str, run_key: str) -> builtins.list[ThreadCheckpoint]:
        """Every checkpoint of the tenant saved under this run key, in any thread, by thread,
        namespace and id (payloads not read); read through the run index."""
        check_id("tenant_id", tenant_id)
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS,
            {"tenant_id": tenant_id, "run_key": decide.check_key("run_key", run_key, empty=False)},
            order_by=_BY_RUN, columns=_ROW_COLUMNS,
        ))
        found = [_checkpoint(tenant_id, row) for row in rows]
        return sorted(found, key=lambda item: (item.thread_id, item.namespace, item.checkpoint_id))

    async def namespaces(self, tenant_id: str, thread_id: str) -> builtins.list[str]:
        """The namespaces in which the thread has checkpoints, sorted."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, {"tenant_id": tenant_id, "thread_id": thread_id},
            columns=("namespace",),
        ))
        return sorted({row["namespace"] for row in rows})

    async def delete_thread(self, tenant_id: str, thread_id: str) -> int:
        """Delete every checkpoint and write of the thread, in every namespace, with one
        tombstone; return how many checkpoints went (0: nothing appended)."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        return await self._removal(tenant_id, thread_id,
                                   lambda: self._delete_once(tenant_id, thread_id))

    async def _delete_once(self, tenant_id: str, thread_id: str) -> int:
        plan = await self._delete_plan(tenant_id, thread_id)
        if plan is None:
            return 0
        await self._log.append(tenant_id, plan.stream_id, [plan.event],
                               expected_version=plan.expected_version, release=plan.releases)
        logger.info("thread_deleted", tenant=tenant_id, thread=thread_id,
                    checkpoints=len(plan.checkpoints))
        return len(plan.checkpoints)

    async def _delete_plan(
        self, tenant_id: str, thread_id: str, version: int | None = None
    ) -> StreamRemoval | None:
        """The tombstone deleting the whole thread, fenced on the version read first (or
        on ``version``, read by the caller before whatever it decided from)."""
        stream = decide.thread_stream(thread_id)
        if version is None:
            version = await self._stream_version(tenant_id, stream)
        thread = {"tenant_id": tenant_id, "thread_id": thread_id}
        holdings = await self._held(tenant_id, thread_id, version)
        if not holdings:
            return None
        rows = await self._log.query(
            ViewQuery(THREAD_CHECKPOINTS, thread, columns=("namespace", "checkpoint_id"))
        )
        writes = len(await self._log.query(
            ViewQuery(THREAD_WRITES, thread, columns=("idx",))
        ))
        releases = decide.releases_of(holdings.everything())
        tombstone = ThreadDeleted(thread_id=thread_id, checkpoints=len(rows), writes=writes,
                                  released=_hex(releases), heads=decide.heads_of(rows))
        return StreamRemoval(stream, version, tombstone, releases, _named(rows), emptied=True)

    async def delete_runs(self, tenant_id: str, run_keys: Sequence[str]) -> int:
        """Delete the checkpoints (and their writes) of these runs in every thread of the
        tenant: one tombstone per affected thread. Returns how many checkpoints went."""
        check_id("tenant_id", tenant_id)
        wanted = {decide.check_key("run_key", key, empty=False) for key in run_keys}
        if not wanted:
            return 0
        rows = [row for key in sorted(wanted)
                for row in await self._log.query(runs_query(tenant_id, key))]
        removed = 0
        for thread_id in sorted({row["thread_id"] for row in rows}):
            removed += await self._removal(tenant_id, thread_id, partial(
                self._remove_once, tenant_id, thread_id,
                lambda found: decide.keys_of_runs(found, wanted),
                ThreadRemoval(reason="runs", run_keys=sorted(wanted)),
            ))
        return removed

    async def prune(self, tenant_id: str, thread_id: str, *, keep_latest: int = 1) -> int:
        """Remove all but the ``keep_latest`` highest checkpoint ids of each namespace of
        the thread (and their writes); one tombstone. Returns how many went."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        if isinstance(keep_latest, bool) or not isinstance(keep_latest, int) or keep_latest < 0:
            raise InvalidInput("keep_latest", f"must be a whole number ≥ 0, not {keep_latest!r}")
        if keep_latest == 0:
            return await self.delete_thread(tenant_id, thread_id)
        return await self._removal(tenant_id, thread_id, partial(
            self._remove_once, tenant_id, thread_id,
            lambda found: decide.keys_to_prune(found, keep_latest),
            ThreadRemoval(reason="prune", keep=keep_latest),
        ))

    async def _remove_once(
        self, tenant_id: str, thread_id: str, select: Selection, removal: ThreadRemoval
    ) -> int:
        plan = await self.removal_plan(tenant_id, thread_id, select, removal)
        if plan is None:
            return 0
        await self._log.append(tenant_id, plan.stream_id, [plan.event],
                               expected_version=plan.expected_version, release=plan.releases)
        logger.info("checkpoints_removed", tenant=tenant_id, thread=thread_id,
                    reason=removal.reason, checkpoints=len(plan.checkpoints))
        return len(plan.checkpoints)

    async def removal_plan(
        self, tenant_id: str, thread_id: str, select: Selection, removal: ThreadRemoval,
        *, whole: bool = False,
    ) -> StreamRemoval | None:
        """The tombstone removing the checkpoints ``select`` picks from the thread's rows
        (namespace, checkpoint id, run key, channels, recorded time, subject), with their writes
        and the values no remaining checkpoint carries; decided, not appended (the caller
        appends it fenced on its ``expected_version``). None when nothing is picked. With
        ``whole``, a pick of every checkpoint deletes the thread (`ThreadDeleted`)."""
        stream = decide.thread_stream(thread_id)
        version = await self._stream_version(tenant_id, stream)
        thread = {"tenant_id": tenant_id, "thread_id": thread_id}
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, thread,
            columns=("namespace", "checkpoint_id", "run_key", "channels", "recorded_at",
                     "subject"),
        ))
        keys = select(rows)
        if not keys:
            return None
        if whole and len(keys) == len(rows):
            return await self._delete_plan(tenant_id, thread_id, version)
        gone = {(key.namespace, key.checkpoint_id) for key in keys}
        remaining = [
            {"namespace": row["namespace"], "versions": _versions.decode(row["channels"])}
            for row in rows if (row["namespace"], row["checkpoint_id"]) not in gone
        ]
        stored = await self._log.query(ViewQuery(
            THREAD_VALUES, thread,
            columns=("namespace", "channel", "channel_version", "encoding", "digest"),
        ))
        values = decide.values_to_release(remaining, stored)
        holdings = await self._held(tenant_id, thread_id, version)
        values = await self._keep_chains(tenant_id, stored, values, holdings)
        releases = decide.releases_of([
            *holdings.of_checkpoints(gone),
            *holdings.of_values((key.namespace, key.channel, key.version) for key in values),
        ])
        tombstone = ThreadCheckpointsRemoved(
            thread_id=thread_id, reason=removal.reason, removed=keys,
            run_keys=removal.run_keys, keep=removal.keep, values=values,
            released=_hex(releases),
        )
        named = _named({"namespace": key.namespace, "checkpoint_id": key.checkpoint_id}
                       for key in keys)
        return StreamRemoval(stream, version, tombstone, releases, named, emptied=False)

    async def _held(self, tenant_id: str, thread_id: str,
                    version: int | None = None) -> ThreadHoldings:
        """What the thread's remaining checkpoints, values and writes hold, from its
        events through ``version`` (`eventlog.checkpoints.holdings`: the last fold of a
        few threads is kept and extended, so removals in a row read each event once)."""
        return await self._holdings.fold(tenant_id, thread_id, version)

    async def _keep_chains(
        self, tenant_id: str, stored: builtins.list[dict[str, Any]],
        values: builtins.list[ValueKey], holdings: ThreadHoldings,
    ) -> builtins.list[ValueKey]:
        """``values`` (to release) without those on the manifest chain of a value that
        stays (stored as elements, it rests on them: `eventlog.checkpoints.elements`)."""
        going = {(key.namespace, key.channel, key.version) for key in values}
        staying = [row["digest"] for row in stored
                   if row["encoding"] == elements.ELEMENTS_ENCODING
                   and (row["namespace"], row["channel"], row["channel_version"]) not in going]
        if not staying or not going:
            return values
        needed = elements.chain_digests(
            (await self._blobs(tenant_id, staying)).values())
        kept = holdings.value_holding(needed)
        return [key for key in values if (key.namespace, key.channel, key.version) not in kept]

    async def copy_thread(self, tenant_id: str, source_thread_id: str,
                          target_thread_id: str) -> int:
        """Copy every checkpoint and write of one thread to another, in one append that
        records the source; return how many checkpoints were copied (0: nothing appended).

        Checkpoints the target already has by id are replaced (like a put); writes land as
        `put_writes` would put them (the target's first write per idx ≥ 0 stays).
        """
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(source_thread_id, "source_thread_id")
        decide.check_thread_id(target_thread_id, "target_thread_id")
        if source_thread_id == target_thread_id:
            raise InvalidInput("target_thread_id", "must differ from source_thread_id")
        return await decide_fenced(
            lambda _attempt: self._copy_once(tenant_id, source_thread_id, target_thread_id),
            REMOVAL_RETRIES, _retried("copy_retried", tenant_id, source_thread_id),
        )

    async def _copy_once(self, tenant_id: str, source: str, target: str) -> int:
        stream = decide.thread_stream(source)
        version = await self._viewed_version(tenant_id, stream)  # first: _payloads_gone
        thread = {"tenant_id": tenant_id, "thread_id": source}
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, thread, order_by=("version",),
        ))
        if not rows:
            return 0
        writes = await self._log.query(ViewQuery(
            THREAD_WRITES, thread, order_by=("version", "task_id", "idx"),
        ))
        namespaces = {row["namespace"] for row in rows}
        values: dict[str, list[BlobRef]] = {}
        for value in await self._log.query(ViewQuery(THREAD_VALUES, thread)):
            if value["namespace"] in namespaces:
                values.setdefault(value["namespace"], []).append(BlobRef(
                    name=value["channel"], encoding=value["encoding"],
                    digest=value["digest"].hex(), version=value["channel_version"],
                ))
        wanted = [row["state_digest"] for row in rows]
        wanted += [bytes.fromhex(ref.digest) for refs in values.values() for ref in refs]
        wanted += [row["digest"] for row in writes]
        blobs = await self._blobs(tenant_id, wanted)
        missing = [digest for digest in wanted if digest not in blobs]
        if missing:
            raise await self._payloads_gone(tenant_id, stream, version, missing[0])
        if self._log.sealer is not None:  # manifests name the target's addresses
            readdressed = await self._readdressed(tenant_id, target, values, writes, blobs)
            if readdressed is None:
                raise await self._payloads_gone(tenant_id, stream, version, wanted[0])
            values, writes = readdressed
        copied = await elements.copied_values(
            values, blobs, partial(self._blobs, tenant_id))
        if copied is None:
            raise await self._payloads_gone(tenant_id, stream, version, wanted[0])
        values, extra = copied
        copied_writes = elements.copied_writes(writes, blobs)
        extra += [digest for refs in copied_writes.values() for digest in refs]
        blobs.update(await self._blobs(tenant_id, [d for d in extra if d not in blobs]))
        # What the copy's events reference, each once per reference.
        wanted = [row["state_digest"] for row in rows]
        wanted += [bytes.fromhex(digest) for refs in values.values() for ref in refs
                   for digest in (ref.digest, *ref.elements)]
        wanted += [digest for row in writes
                   for digest in (row["digest"], *copied_writes.get(row["digest"], ()))]
        missing = [digest for digest in wanted if digest not in blobs]
        if missing:
            raise await self._payloads_gone(tenant_id, stream, version, missing[0])
        events: list[Event] = [ThreadCopied(
            thread_id=target, source_thread_id=source, checkpoints=len(rows),
            writes=len(writes),
        )]
        for row in rows:  # each namespace's stored values travel with its first checkpoint
            stored = values.pop(row["namespace"], [])
            events.append(_copied_put(target, row, len(blobs[row["state_digest"]]), stored))
        events += _copied_writes(target, writes, copied_writes)
        async with self._lock(tenant_id, target):
            await self._log.append(tenant_id, decide.thread_stream(target), events,
                                   attach=[blobs[digest] for digest in wanted])
        logger.info("thread_copied", tenant=tenant_id, source=source, thread=target,
                    checkpoints=len(rows))
        return len(rows)

    async def _readdressed(
        self, tenant_id: str, target: str, values: dict[str, list[BlobRef]],
        writes: builtins.list[dict[str, Any]], blobs: dict[bytes, bytes],
    ) -> tuple[dict[str, list[BlobRef]], builtins.list[dict[str, Any]]] | None:
        """A copy's element-stored values and writes on an encrypted log, their manifests
        rebuilt under the target's addresses (`element_copies`); None when one is gone."""
        address = await self._log.blob_addresses(tenant_id, decide.thread_stream(target))
        get_blobs = partial(self._blobs, tenant_id)
        copied = await element_copies.readdressed_values(values, blobs, get_blobs, address)
        rows = await element_copies.readdressed_writes(writes, blobs, get_blobs, address)
        return None if copied is None or rows is None else (copied, rows)

    async def adoption_base(self, tenant_id: str, thread_id: str) -> AdoptionBase:
        """What the thread holds now (its version first, so a later append fenced on it
        fails rather than miss a concurrent put): see `AdoptionBase`."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        version = await self._stream_version(tenant_id, decide.thread_stream(thread_id))
        thread = {"tenant_id": tenant_id, "thread_id": thread_id}
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, thread, columns=("namespace", "checkpoint_id")))
        values = await self._log.query(ViewQuery(
            THREAD_VALUES, thread, columns=("namespace", "channel", "channel_version")))
        writes = await self._log.query(ViewQuery(
            THREAD_WRITES, thread, columns=("namespace", "checkpoint_id", "task_id", "idx")))
        return AdoptionBase(
            writes=frozenset((row["namespace"], row["checkpoint_id"], row["task_id"],
                              row["idx"]) for row in writes),
            version=version,
            checkpoints=frozenset((row["namespace"], row["checkpoint_id"]) for row in rows),
            values=frozenset((row["namespace"], row["channel"], row["channel_version"])
                             for row in values),
        )

    async def adopt(
        self, tenant_id: str, thread_id: str, checkpoints: Sequence[Adoption], *,
        framework: str, source: str, expected_version: int,
    ) -> int:
        """Append checkpoints adopted from ``source`` (with their writes) in one append:
        `ThreadAdopted`, then each put and its writes as the adapter writes them. Fenced on
        ``expected_version`` (`adoption_base`): `VersionConflict` if the thread changed
        since. Returns the thread's new version (the fence of the next chunk)."""
        check_id("tenant_id", tenant_id)
        decide.check_thread_id(thread_id)
        decide.check_path("framework", framework, empty=False)
        decide.check_path("source", source, empty=False)
        if not checkpoints:
            return expected_version
        events: list[Event] = []  # the ThreadAdopted goes first, once it is counted
        attach: list[bytes] = []
        adopted: list[AdoptedCheckpoint] = []
        writes = 0
        for item in checkpoints:
            if item.state is not None:  # else writes only: the thread holds the checkpoint
                put, blobs = decide.put_event(
                    thread_id=thread_id, namespace=item.namespace,
                    checkpoint_id=item.checkpoint_id, parent_id=item.parent_id,
                    run_key=item.run_key, step=item.step, state=item.state,
                    channels=item.channels, metadata=item.metadata,
                    max_bytes=self._log.max_payload_bytes,
                )
                events.append(put)
                attach += blobs
                adopted.append(AdoptedCheckpoint(namespace=item.namespace,
                                                 checkpoint_id=item.checkpoint_id,
                                                 ts=decide.check_path("ts", item.ts)))
            for task in item.writes:
                plan = decide.plan_writes(task.writes, self._log.max_payload_bytes)
                if not plan.writes:
                    continue
                events.append(ThreadWritesPut(
                    thread_id=thread_id, namespace=item.namespace,
                    checkpoint_id=item.checkpoint_id, task_id=check_id("task_id", task.task_id),
                    task_path=decide.check_path("task_path", task.task_path),
                    writes=plan.writes,
                ))
                attach += plan.attach
                writes += len(plan.writes)
        events.insert(0, ThreadAdopted(thread_id=thread_id, framework=framework, source=source,
                                       checkpoints=adopted, writes=writes))
        async with self._lock(tenant_id, thread_id):
            result = await self._log.append(
                tenant_id, decide.thread_stream(thread_id), events,
                expected_version=expected_version, attach=attach,
            )
        logger.info("thread_adopted", tenant=tenant_id, thread=thread_id,
                    checkpoints=len(adopted), writes=writes)
        return result.version

    # -- reads ---------------------------------------------------------------------------

    async def _complete(
        self, tenant_id: str, rows: builtins.list[dict[str, Any]]
    ) -> builtins.list[ThreadCheckpoint]:
        """Checkpoints from view rows read with their state blob, their channel values
        and their writes (`_PAYLOADS`); values stored as elements resolved (two reads
        for the whole page when any is)."""
        read: dict[bytes, bytes] = {}
        for row in rows:
            read.update(row.pop("blobs", None) or {})
        resolved = await self._resolved(tenant_id, [
            item for row in rows for part in ("values", "writes") for item in row[part]],
            read)
        return [_completed(tenant_id, row, resolved) for row in rows]

    async def _resolved(self, tenant_id: str, items: Sequence[Mapping[str, Any]],
                        read: Mapping[bytes, bytes] | None = None,
                        ) -> dict[bytes, Elements | None]:
        """The values of the manifests among read rows (of ``encoding`` and ``blob``);
        ``read``: element blobs read with the rows (`_guess`)."""
        manifests = [item["blob"] for item in items if item["blob"] is not None
                     and item["encoding"] == elements.ELEMENTS_ENCODING]
        if not manifests:
            return {}
        return await elements.resolve(manifests, partial(self._blobs, tenant_id),
                                             (self._manifests, tenant_id), read)

    async def _blobs(self, tenant_id: str, digests: builtins.list[bytes]) -> dict[bytes, bytes]:
        unique = list(dict.fromkeys(digests))
        blobs: dict[bytes, bytes] = {}
        for start in range(0, len(unique), _CHUNK):
            blobs.update(await self._log.get_blobs(tenant_id, unique[start:start + _CHUNK]))
        return blobs

    async def _stream_version(self, tenant_id: str, stream_id: str) -> int:
        head = await self._log.stream_head(tenant_id, stream_id)
        return 0 if head is None else head[0]

    async def _viewed_version(self, tenant_id: str, stream_id: str) -> int:
        """The stream's version as the views show it (read where the views are read)."""
        rows = await self._log.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": tenant_id, "stream_id": stream_id},
            columns=("version",),
        ))
        return int(rows[0]["version"]) if rows else 0

    async def _payloads_gone(
        self, tenant_id: str, stream: str, version: int, digest: bytes
    ) -> VersionConflict | BlobMissing:
        """Why a payload a copy read the rows of is not stored. A removal that appended to
        the source since the copy read its ``version`` purged it: that is the conflict the
        copy lost (it decides again). Else nothing explains it: `BlobMissing`."""
        now = await self._viewed_version(tenant_id, stream)
        if now != version:
            return VersionConflict(stream, version, now)
        return BlobMissing(digest, stream)

    def _lock(self, tenant_id: str, thread_id: str) -> asyncio.Lock:
        """This process's lock on one thread's stream.

        Appends to one stream from one process take turns here instead of racing for the
        next version: LangGraph writes a super-step's checkpoint and every parallel task's
        writes to one thread at once, and hundreds of racing appends would exhaust the
        log's retries. Other processes still race, and the log still settles that.
        """
        key = (tenant_id, thread_id)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def _removal(
        self, tenant_id: str, thread_id: str, once: Callable[[], Awaitable[int]]
    ) -> int:
        """``once()`` (a removal of the thread's checkpoints), decided again after each lost
        race, each try under the thread's lock: the first reads and appends as any writer
        does, later ones back off and decide again holding the thread's stream, so that
        the version read is the one appended at. Gives up after `REMOVAL_TIMEOUT_S`."""
        stream = decide.thread_stream(thread_id)

        async def locked(attempt: int) -> int:
            async with (self._lock(tenant_id, thread_id),
                        held_after_first(self._log, tenant_id, stream, attempt)):
                return await once()

        return await decide_fenced(locked, REMOVAL_RETRIES,
                                   _retried("removal_retried", tenant_id, thread_id))


class ThreadRemoval(msgspec.Struct, frozen=True, kw_only=True):
    """Why checkpoints are removed (the tombstone's reason and its parameters)."""

    reason: str
    run_keys: list[str] = []
    keep: int | None = None


def _retried(event: str, tenant_id: str, thread_id: str) -> Retried:
    """Logs each lost race of a removal or copy (``busy``: the stream was held)."""
    def retried(attempt: int, conflict: VersionConflict) -> None:
        logger.debug(event, tenant=tenant_id, thread=thread_id, attempt=attempt,
                     reason="busy" if conflict.expected == "held" else "conflict")
    return retried


def _checkpoint(tenant_id: str, row: Mapping[str, Any], **payloads: Any) -> ThreadCheckpoint:
    return ThreadCheckpoint(
        tenant_id=tenant_id, thread_id=row["thread_id"], namespace=row["namespace"],
        checkpoint_id=row["checkpoint_id"], parent_id=row["parent_id"],
        run_key=row["run_key"], step=row["step"], metadata=_metadata.decode(row["metadata"]),
        position=row["position"], recorded_at=row["recorded_at"], **payloads,
    )


def _named(rows: Iterable[Mapping[str, Any]]) -> builtins.list[str]:
    """Checkpoint ids as a report names them: ``namespace/id`` outside the root namespace."""
    return [f"{row['namespace']}/{row['checkpoint_id']}" if row["namespace"]
            else row["checkpoint_id"] for row in rows]


def _hex(releases: Mapping[bytes, int]) -> dict[str, int]:
    return {digest.hex(): count for digest, count in releases.items()}


def _completed(tenant_id: str, row: Mapping[str, Any],
               resolved: Mapping[bytes, Elements | None]) -> ThreadCheckpoint:
    """A checkpoint with its state, the channel values it names (a value whose blob is
    gone is left out) and its writes in LangGraph's order."""
    values = {value["channel"]: elements.stored(value["encoding"], value["blob"],
                                                       resolved)
              for value in row["values"]}
    return _checkpoint(
        tenant_id, row, state=_payload(row["state_encoding"], row["blob"]),
        channels={name: value for name, value in values.items() if value is not None},
        versions=_versions.decode(row["channels"]),
        writes=[
            ThreadWrite(task_id=write["task_id"], idx=write["idx"], channel=write["channel"],
                        task_path=write["task_path"],
                        value=elements.stored(write["encoding"], write["blob"],
                                                     resolved))
            for write in sorted(row["writes"], key=_write_order)
        ],
    )


def _histories(channels: Sequence[str], rows: Sequence[HistoryRow],
               resolved: Mapping[bytes, Elements | None]) -> dict[str, ChannelHistory]:
    writes: dict[str, list[HistoryRow]] = {name: [] for name in channels}
    seeds: dict[str, Payload | Elements | None] = {}
    for row in rows:
        if row["kind"] == "value":
            seeds[row["channel"]] = elements.stored(row["encoding"], row["blob"],
                                                           resolved)
        elif elements.stored(row["encoding"], row["blob"], resolved) is not None:
            writes[row["channel"]].append(row)
    return {name: ChannelHistory(
        writes=[ThreadWrite(task_id=row["task_id"], idx=row["idx"], channel=name,
                            task_path=row["task_path"],
                            value=elements.stored(row["encoding"], row["blob"],
                                                         resolved))
                for row in sorted(writes[name], key=_oldest_first)],
        seed=seeds.get(name),
    ) for name in channels}


def _oldest_first(row: Mapping[str, Any]) -> tuple[int, str, str, int]:
    return (-row["depth"], *_write_order(row))


def _payload(encoding: str, data: bytes | None) -> Payload | None:
    return None if data is None else Payload(encoding, data)


def _write_order(write: Mapping[str, Any]) -> tuple[str, str, int]:
    # LangGraph's writes_sort_key: the order live execution applies a step's writes in.
    return (write["task_path"], write["task_id"], write["idx"])


def _copied_put(
    target: str, row: Mapping[str, Any], size: int, stored: builtins.list[BlobRef]
) -> ThreadCheckpointPut:
    return ThreadCheckpointPut(
        thread_id=target, namespace=row["namespace"], checkpoint_id=row["checkpoint_id"],
        parent_id=row["parent_id"], run_key=row["run_key"], step=row["step"],
        state_encoding=row["state_encoding"], state_digest=row["state_digest"].hex(),
        state_size=size, channels=stored, versions=_versions.decode(row["channels"]),
        metadata=_metadata.decode(row["metadata"]),
    )


def _copied_writes(target: str, writes: Sequence[Mapping[str, Any]],
                   elements: Mapping[bytes, builtins.list[bytes]]) -> list[Event]:
    grouped: dict[tuple[str, str, str, str], list[WriteRef]] = {}
    for write in writes:
        key = (write["namespace"], write["checkpoint_id"], write["task_id"], write["task_path"])
        grouped.setdefault(key, []).append(WriteRef(
            idx=write["idx"], channel=write["channel"], encoding=write["encoding"],
            digest=write["digest"].hex(),
            elements=[digest.hex() for digest in elements.get(write["digest"], ())],
        ))
    return [
        ThreadWritesPut(thread_id=target, namespace=namespace, checkpoint_id=checkpoint_id,
                        task_id=task_id, task_path=task_path, writes=refs)
        for (namespace, checkpoint_id, task_id, task_path), refs in grouped.items()
    ]
