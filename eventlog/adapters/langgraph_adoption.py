"""Adoption both ways between LangGraph's savers and the log.

`adopt_langgraph` takes the threads of any `BaseCheckpointSaver` (LangGraph's
``AsyncPostgresSaver``, ``AsyncSqliteSaver``, a user's own) into a tenant of the log;
`export_langgraph` writes a tenant's LangGraph threads into one. Both go through the
savers' own API, never their tables:

- **In**: the source is read with ``alist`` (every thread: ``alist(None)`` once, kept
  while it holds at most `KEPT` checkpoints; else it yields the thread ids and each
  thread's checkpoints are listed again on its turn), with ``aget_tuple`` for a
  checkpoint whose listing carried no pending writes. Each thread's checkpoints are
  appended oldest first (by id, as LangGraph orders them) as exactly the events
  `AsyncEventlogSaver` writes (id, parent, metadata, the checkpoint with its ``ts``,
  channel values by version, each task's pending writes), preceded in the same append by a
  `ThreadAdopted` that names the source and each checkpoint's original ``ts``. Appends
  carry up to `CHUNK` checkpoints, each fenced on the version read before, so a re-run
  (or a concurrent one) adds only checkpoints the thread does not hold.
- **Out**: each thread's checkpoints, oldest first, go to the target's ``aput`` (with the
  parent as the config's ``checkpoint_id`` and the channel versions not yet written as
  ``new_versions``) and their pending writes to ``aput_writes``, one task at a time;
  checkpoints the target already holds are skipped.
- Nothing read runs code, a dry run's included: while the call runs the source saver's
  ``serde`` is a `CheckedSerde`, LangGraph's strict serializer that first lists what a
  value names and refuses one naming a type outside LangGraph's safe list and
  ``allowed_msgpack_modules`` (or a pickle) before anything of it is imported; export reads
  the log the same way. So a copy never changes a value either (strict mode alone would
  hand back a refused type's arguments in its place).
- A value that cannot be read (or is refused) is named with its thread and checkpoint
  (`AdoptionFailed`): the wrapped serializer returns it to this module instead of failing
  the listing. What was adopted before it stays committed, and a re-run continues from
  there.

Pending writes keep their task and channel; their task path is not in LangGraph's
`CheckpointTuple`, so it is not carried (LangGraph matches writes to tasks by task id).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from eventlog.adapters._adoption import CHUNK, AdoptionReport, Progress, ThreadAppender
from eventlog.adapters._frameworks import LANGGRAPH, MAF_ENCODING
from eventlog.adapters._langgraph_serde import CheckedSerde, Refused
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints.thread_records import (
    AdoptedWrites,
    Adoption,
    ChannelValue,
    Payload,
)
from eventlog.errors import AdoptionFailed, EventLogError
from eventlog.face import OpenLog
from eventlog.log import EventLog
from eventlog.validation import check_id
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS

__all__ = ["CHUNK", "KEPT", "AdoptionReport", "adopt_langgraph", "export_langgraph"]

KEPT = 20_000
"""The most source checkpoints the listing of a whole source keeps for the adoption (with
more, each thread is listed again on its turn, so memory stays bounded)."""

class _Unreadable(dict[str, Any]):
    """What the wrapped serializer returns for a value it cannot load (a dict, empty, so
    that a saver may still set a checkpoint's ``channel_values`` on it)."""

    def __init__(self, type_: str, error: Exception) -> None:
        super().__init__()
        self.type = type_
        self.error = error

    def reason(self) -> str:
        if isinstance(self.error, Refused):
            return str(self.error)
        return (f"its serializer cannot load a {self.type!r} value "
                f"({type(self.error).__name__}: {self.error})")


class _Tolerant(SerializerProtocol):
    """The source saver's serializer, returning `_Unreadable` where it would raise."""

    def __init__(self, inner: SerializerProtocol) -> None:
        self.inner = inner

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        try:
            return self.inner.loads_typed(data)
        except Exception as error:  # any serializer's failure: named per checkpoint
            return _Unreadable(str(data[0]), error)


@asynccontextmanager
async def _tolerant(
    saver: BaseCheckpointSaver[Any], allowed: Iterable[tuple[str, ...] | type] | None,
) -> AsyncIterator[None]:
    original = saver.serde
    saver.serde = _Tolerant(CheckedSerde(original, allowed))
    try:
        yield
    finally:
        saver.serde = original


async def adopt_langgraph(
    log: OpenLog,
    saver: BaseCheckpointSaver[Any],
    *,
    tenant_id: str,
    thread_ids: Iterable[str] | None = None,
    dry_run: bool = False,
    source: str | None = None,
    serde: SerializerProtocol | None = None,
    allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | None = None,
    progress: Progress | None = None,
) -> AdoptionReport:
    """Adopt the checkpoints of ``saver`` (every thread, or ``thread_ids``) into the
    tenant: what the tenant does not hold yet, as `AsyncEventlogSaver` (with ``serde``)
    would have written it, each append marked `ThreadAdopted` from ``source`` (default:
    the saver's class name). ``dry_run`` counts and writes nothing. Values are loaded
    only when every type they name is in LangGraph's safe list or
    ``allowed_msgpack_modules`` (classes or ``(module, name)`` pairs). Raises
    `AdoptionFailed` naming a checkpoint that cannot be read or names another type;
    `FrameworkConflict` for a thread that is an Agent Framework workflow of the tenant.
    The saver's ``serde`` is wrapped while the call runs (see the module docstring): give
    it a saver nothing else uses meanwhile."""
    target = AsyncEventlogSaver(log, tenant_id=tenant_id, serde=serde,
                                allowed_msgpack_modules=allowed_msgpack_modules)
    report = AdoptionReport(source=source or type(saver).__name__, target=tenant_id,
                            dry_run=dry_run)
    async with _tolerant(saver, allowed_msgpack_modules):
        threads, total, listed = await _source_threads(saver, thread_ids)
        done = 0
        for thread_id in threads:
            try:
                done += await _adopt_thread(target, saver, thread_id, report,
                                            listed.pop(thread_id, None))
            except AdoptionFailed as error:
                if not dry_run:
                    raise
                raise AdoptionFailed(error.thread_id, error.checkpoint_id, error.why,
                                     dry_run=True) from error
            if progress is not None:
                progress(done, total)
    return report


async def _source_threads(
    saver: BaseCheckpointSaver[Any], thread_ids: Iterable[str] | None,
) -> tuple[list[str], int | None, dict[str, list[CheckpointTuple]]]:
    """The threads to adopt, how many checkpoints the source holds (when it was listed
    whole) and the listing itself, by thread, while it stays under `KEPT` checkpoints
    (beyond that each thread is listed again when its turn comes)."""
    if thread_ids is not None:
        return sorted({check_id("thread_id", str(thread)) for thread in thread_ids}), None, {}
    counts: dict[str, int] = {}
    kept: dict[str, list[CheckpointTuple]] | None = {}
    async for found in _listing(saver, None):
        thread_id = str(found.config["configurable"]["thread_id"])
        counts[thread_id] = counts.get(thread_id, 0) + 1
        if kept is not None:
            kept.setdefault(thread_id, []).append(found)
            if sum(counts.values()) > KEPT:
                kept = None  # too many to hold: each thread is listed on its turn
    return sorted(counts), sum(counts.values()), kept or {}


async def _adopt_thread(
    target: AsyncEventlogSaver, saver: BaseCheckpointSaver[Any], thread_id: str,
    report: AdoptionReport, listed: list[CheckpointTuple] | None,
) -> int:
    """Adopt one thread (``listed``: its checkpoints, if the source was listed whole);
    return how many source checkpoints it had."""
    found = listed if listed is not None else [
        item async for item in _listing(saver, _thread_config(thread_id))]
    found.sort(key=lambda item: str(item.config["configurable"]["checkpoint_id"]))
    if not found:
        return 0
    await target._claims.check(thread_id)
    base = await target._threads.adoption_base(target.tenant_id, thread_id)
    stored = set(base.values)
    appender = ThreadAppender(target._threads, target.tenant_id, thread_id, framework=LANGGRAPH,
                              report=report, version=base.version)
    for item in found:
        key = (_namespace(item.config), str(item.config["configurable"]["checkpoint_id"]))
        present = key in base.checkpoints
        try:
            adoption = await _adoption(target, saver, item, stored,
                                       base.writes if present else None)
        except AdoptionFailed:
            await appender.flush()  # what came before it stays, whole
            raise
        if present:
            report.skipped += 1
        if adoption is not None:
            await appender.add(adoption, new=not present)
    await appender.flush()
    if appender.added:
        report.threads.append(thread_id)
    return len(found)


async def _adoption(
    target: AsyncEventlogSaver, saver: BaseCheckpointSaver[Any], item: CheckpointTuple,
    stored: set[tuple[str, str, str]], held: frozenset[tuple[str, str, str, int]] | None,
) -> Adoption | None:
    """One source checkpoint as the put (and writes) the adapter would append; for one the
    thread holds (``held``: the thread's writes), only its writes the thread lacks (None
    when there are none)."""
    configurable = item.config["configurable"]
    thread_id, namespace = str(configurable["thread_id"]), _namespace(item.config)
    checkpoint_id = str(configurable["checkpoint_id"])

    def failed(reason: str) -> AdoptionFailed:
        return AdoptionFailed(thread_id, checkpoint_id, reason)

    if held is None and isinstance(item.checkpoint, _Unreadable):
        raise failed(item.checkpoint.reason())
    writes = item.pending_writes
    if writes is None:  # a saver whose listing leaves the writes out
        again = await _get(saver, item.config)
        writes = [] if again is None or again.pending_writes is None else again.pending_writes
    try:
        tasks: dict[str, list[tuple[int, str, Payload]]] = {}
        counted: dict[str, int] = {}
        for task_id, channel, value in writes:
            index = counted.get(task_id, 0)
            counted[task_id] = index + 1
            idx = WRITES_IDX_MAP.get(channel, index)
            if held is not None and (namespace, checkpoint_id, task_id, idx) in held:
                continue
            if isinstance(value, _Unreadable):
                raise failed(f"pending write of task {task_id} to {channel!r}: "
                             f"{value.reason()}")
            tasks.setdefault(str(task_id), []).append((idx, channel, target._dump(value)))
        adopted = [AdoptedWrites(task_id=task_id, writes=task) for task_id, task in tasks.items()]
        if held is not None:
            return Adoption(checkpoint_id=checkpoint_id, namespace=namespace, state=None,
                            writes=adopted) if adopted else None
        state: dict[str, Any] = dict(item.checkpoint)
        values: dict[str, Any] = state.pop("channel_values", None) or {}
        channels: dict[str, Payload | ChannelValue] = {}
        for name, version in item.checkpoint["channel_versions"].items():
            key = (namespace, name, str(version))
            value = values.get(name)
            if isinstance(value, _Unreadable):
                raise failed(f"channel {name!r}: {value.reason()}")
            if key in stored or name not in values:
                channels[name] = ChannelValue(str(version))
            else:
                channels[name] = ChannelValue(str(version), target._dump(value))
                stored.add(key)
        dumped_state = target._dump(state)
    except (TypeError, ValueError) as error:
        if isinstance(error, EventLogError):
            raise
        raise failed(f"{type(error).__name__}: {error}") from error
    metadata = dict(item.metadata or {})
    run, step = metadata.get("run_id"), metadata.get("step")
    parent = item.parent_config
    return Adoption(
        checkpoint_id=checkpoint_id, namespace=namespace, state=dumped_state,
        channels=channels,
        parent_id=None if parent is None else parent["configurable"].get("checkpoint_id"),
        run_key=None if run is None else str(run),
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        metadata=metadata, ts=str(item.checkpoint.get("ts", "")), writes=adopted,
    )


async def export_langgraph(
    log: OpenLog,
    saver: BaseCheckpointSaver[Any],
    *,
    tenant_id: str,
    thread_ids: Iterable[str] | None = None,
    target: str | None = None,
    serde: SerializerProtocol | None = None,
    allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | None = None,
    progress: Progress | None = None,
) -> AdoptionReport:
    """Write the tenant's LangGraph threads (every one, or ``thread_ids``) into ``saver``
    through its ``aput`` and ``aput_writes``, oldest checkpoint first, skipping the
    checkpoints it already holds; a graph compiled with ``saver`` then resumes them. The
    log is read as adoption reads its source: `AdoptionFailed` names a value naming a type
    outside LangGraph's safe list and ``allowed_msgpack_modules``, nothing of it built."""
    ours = AsyncEventlogSaver(log, tenant_id=tenant_id, serde=_Tolerant(
        CheckedSerde(serde, allowed_msgpack_modules)))
    report = AdoptionReport(source=tenant_id, target=target or type(saver).__name__)
    threads = (sorted({check_id("thread_id", str(t)) for t in thread_ids})
               if thread_ids is not None else await _langgraph_threads(log, tenant_id))
    async with _tolerant(saver, allowed_msgpack_modules):  # what the target holds is read too
        done = 0
        for thread_id in threads:
            done += await _export_thread(ours, saver, thread_id, report)
            if progress is not None:
                progress(done, None)
    return report


async def _export_thread(ours: AsyncEventlogSaver, saver: BaseCheckpointSaver[Any],
                         thread_id: str, report: AdoptionReport) -> int:
    """Export one thread; return how many checkpoints the log holds of it."""
    found = [item async for item in ours.alist(_thread_config(thread_id))]
    found.sort(key=lambda item: str(item.config["configurable"]["checkpoint_id"]))
    held = {(_namespace(item.config), str(item.config["configurable"]["checkpoint_id"])):
            _task_writes(item.pending_writes or [])
            async for item in _listing(saver, _thread_config(thread_id))}
    written: set[tuple[str, str, str]] = set()
    exported = 0
    for item in found:
        exported += await _export_one(saver, item, held, written, report)
    if exported:
        report.threads.append(thread_id)
    return len(found)


async def _export_one(
    saver: BaseCheckpointSaver[Any], item: CheckpointTuple,
    held: dict[tuple[str, str], dict[str, list[tuple[str, str]]]],
    written: set[tuple[str, str, str]], report: AdoptionReport,
) -> int:
    """Put one checkpoint and its writes; for one the target holds, only the writes of
    the tasks whose writes there differ (each task's writes again whole: the saver keeps
    the first per index, so what it has stays), and return 0."""
    configurable = item.config["configurable"]
    thread_id, namespace = str(configurable["thread_id"]), _namespace(item.config)
    checkpoint_id = str(configurable["checkpoint_id"])
    _refuse_unreadable(item, thread_id, checkpoint_id)
    versions = item.checkpoint["channel_versions"]
    tasks: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in item.pending_writes or []:
        tasks.setdefault(task_id, []).append((channel, value))
    there = held.get((namespace, checkpoint_id))
    if there is not None:
        report.skipped += 1
        written.update((namespace, name, str(v)) for name, v in versions.items())
        ours = _task_writes(item.pending_writes or [])
        for task_id, writes in tasks.items():
            if ours[task_id] != there.get(task_id):
                await _put_writes(saver, item.config, writes, task_id)
                report.writes += len(writes)
        return 0
    new_versions = {name: v for name, v in versions.items()
                    if (namespace, name, str(v)) not in written}
    written.update((namespace, name, str(v)) for name, v in versions.items())
    parent = None if item.parent_config is None else item.parent_config["configurable"].get(
        "checkpoint_id")
    config: RunnableConfig = {"configurable": {
        "thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": parent,
    }}
    if parent is None:
        del config["configurable"]["checkpoint_id"]
    stored = await _put(saver, config, item.checkpoint, item.metadata, new_versions)
    for task_id, writes in tasks.items():
        await _put_writes(saver, stored, writes, task_id)
        report.writes += len(writes)
    report.checkpoints += 1
    return 1


def _refuse_unreadable(item: CheckpointTuple, thread_id: str, checkpoint_id: str) -> None:
    """`AdoptionFailed` for the first value of ``item`` that the log's reader refused."""
    found: list[tuple[str, Any]] = [("its state", item.checkpoint)]
    found += [(f"channel {name!r}", value)
              for name, value in (item.checkpoint.get("channel_values") or {}).items()]
    found += [(f"pending write of task {task} to {channel!r}", value)
              for task, channel, value in item.pending_writes or []]
    for where, value in found:
        if isinstance(value, _Unreadable):
            raise AdoptionFailed(thread_id, checkpoint_id, f"{where}: {value.reason()}")


def _task_writes(writes: Iterable[tuple[str, str, Any]]) -> dict[str, list[tuple[str, str]]]:
    """Each task's writes as (channel, value's repr), sorted: what tells two stores'
    pending writes of a checkpoint apart."""
    tasks: dict[str, list[tuple[str, str]]] = {}
    for task_id, channel, value in writes:
        tasks.setdefault(str(task_id), []).append((channel, repr(value)))
    return {task_id: sorted(found) for task_id, found in tasks.items()}


async def _langgraph_threads(log: EventLog, tenant_id: str) -> list[str]:
    """The tenant's threads that hold LangGraph checkpoints (not Agent Framework's)."""
    rows = await log.query(ViewQuery(
        THREAD_CHECKPOINTS, {"tenant_id": check_id("tenant_id", tenant_id)},
        columns=("thread_id", "state_encoding"),
    ))
    return sorted({row["thread_id"] for row in rows if row["state_encoding"] != MAF_ENCODING})


# LangGraph's sync savers (SqliteSaver, PostgresSaver) leave the async methods
# unimplemented: their sync ones then run in a worker thread.

async def _listing(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig | None,
) -> AsyncIterator[CheckpointTuple]:
    try:
        async for item in saver.alist(config):
            yield item
    except NotImplementedError:
        for item in await asyncio.to_thread(lambda: list(saver.list(config))):
            yield item


async def _get(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> CheckpointTuple | None:
    try:
        return await saver.aget_tuple(config)
    except NotImplementedError:
        return await asyncio.to_thread(saver.get_tuple, config)


async def _put(saver: BaseCheckpointSaver[Any], config: RunnableConfig, checkpoint: Any,
               metadata: Any, new_versions: Any) -> RunnableConfig:
    try:
        return await saver.aput(config, checkpoint, metadata, new_versions)
    except NotImplementedError:
        return await asyncio.to_thread(saver.put, config, checkpoint, metadata, new_versions)


async def _put_writes(saver: BaseCheckpointSaver[Any], config: RunnableConfig,
                      writes: list[tuple[str, Any]], task_id: str) -> None:
    try:
        await saver.aput_writes(config, writes, task_id)
    except NotImplementedError:
        await asyncio.to_thread(saver.put_writes, config, writes, task_id)


def _thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _namespace(config: RunnableConfig) -> str:
    return str(config["configurable"].get("checkpoint_ns", "") or "")
