"""A LangGraph checkpointer on the event log: `AsyncEventlogSaver` and `EventlogSaver`.

Replace ``AsyncPostgresSaver.from_conn_string(DB_URI)`` with
``AsyncEventlogSaver.from_conn_string("postgresql://…", tenant_id="acme")`` (any URL
`open_log` takes) and a graph observes nothing different, while every put, pending write
and delete becomes a hash-chained event that ``eventlog verify``, ``timeline``,
``replay --as-of`` and ``export`` understand. Install with
``pip install "checkpoint-eventlog[langgraph]"``.

How LangGraph's model maps onto `ThreadCheckpoints` (``log.threads``):

- ``thread_id`` is a thread of the saver's tenant; ``checkpoint_ns`` its namespace; the
  checkpoint id is LangGraph's (uuid6, so "latest" is the highest id). A put of an existing
  id replaces it; the parent is the config's ``checkpoint_id``.
- The checkpoint without its channel values is serialized with the saver's ``serde`` as
  the checkpoint's state; each channel value is stored once per (namespace, channel,
  version) as a content-addressed blob, written by the put whose ``new_versions`` name it:
  an unchanged channel is never serialized or stored again (LangGraph's own savers split
  channels by version for the same reason). Metadata is stored as JSON (LangGraph's own keys and
  the config's, as the built-in savers merge them); ``metadata["run_id"]`` is the run key
  `adelete_for_runs` matches and ``metadata["step"]`` the step.
- Pending writes get LangGraph's indexes (``WRITES_IDX_MAP`` for special channels); the
  store keeps the first per (task, idx ≥ 0) and lets negative indexes overwrite.
- Tenants are walls: a saver reads and writes only its ``tenant_id``; ``list(None)`` lists
  every LangGraph thread of that tenant.
- A thread an Agent Framework workflow of the same name holds is refused with
  `FrameworkConflict` (on the first put, a delete, a prune or a copy, and on any read that
  meets one of its checkpoints), never with the serde's own error.

Values are loaded with LangGraph's serializer in its strict mode (CVE-2026-28277): it
builds LangGraph's safe types (datetimes, UUIDs, LangChain messages, ``Send``,
``Interrupt``, ``Command``, …) and those named by ``allowed_msgpack_modules`` (classes or
``(module, name)`` pairs; a graph compiled under ``LANGGRAPH_STRICT_MSGPACK=true`` adds its
state schema's own), and hands back the stored fields of any other type instead of
importing it. ``allowed_msgpack_modules=True`` is LangGraph's permissive mode; a ``serde``
of the application's own is used as given (`eventlog.adapters._langgraph_serde`).

Single-writer threads, when asked: with ``fenced=True`` (on the saver or
``from_conn_string``; per call, ``configurable["eventlog_fenced"]`` overrides it either
way) a put whose parent is not the thread's head in its namespace, a write to an older or
deleted checkpoint, and any write after ``delete_thread`` are refused with
`eventlog.errors.NotThreadHead` and nothing is written: two processes racing one thread
never fork its chain (`eventlog.checkpoints.thread_fence`). Unfenced (the default), puts
and writes append as LangGraph's own savers write.

Who did it: a put or a write is recorded as appended by ``configurable["actor"]`` when the
call's config names one (`ACTOR_KEY`), else by the principal of an `EventLog.acting_as`
block around the call, else by the saver's ``actor``, else by the log's (``open_log``'s
``actor=``, which ``from_conn_string`` passes through); none named, none recorded.

Growing values stored once (``elements=True``, the default): every ``list`` value of a
channel or a pending write (``messages`` under ``add_messages``) is stored element by
element, each element serialized alone as a content-addressed blob and the list as a small
manifest (a delta on the channel's previous version): each message is stored once per
thread, not once per checkpoint (`eventlog.checkpoints.elements`). A read gives back the
same list. ``elements=False`` stores every value whole, as before. On an encrypted log
(``keyring=``) elements and manifests are sealed like any value, and a manifest names its
elements by their sealed addresses.

Sync methods (``graph.invoke``) run the async ones on the saver's loop: from any thread
but that loop's own, where they refuse with `WrongThread` (as LangGraph's async savers do).
`EventlogSaver.from_conn_string` runs the log on a private loop in a background thread for
programs that have no loop.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from eventlog.adapters import _spans
from eventlog.adapters._actors import acting, chosen_actor, sealing
from eventlog.adapters._frameworks import (
    LANGGRAPH,
    MAF_ENCODING,
    ThreadClaims,
    refuse_foreign,
)
from eventlog.adapters._langgraph_memo import MessageMemo
from eventlog.adapters._langgraph_serde import AllowedTypes, StrictSerializer, strict_serde
from eventlog.adapters._loops import (
    BackgroundLoop,
    NotRunning,
    WrongThread,
    on_loop,
    run_blocking,
)
from eventlog.checkpoints.thread_records import (
    ChannelValue,
    Elements,
    Payload,
    ThreadCheckpoint,
)
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.errors import InvalidInput
from eventlog.events.threads import ThreadCheckpointPut
from eventlog.face import OpenLog
from eventlog.opening import open_log
from eventlog.telemetry import traced, traced_iteration
from eventlog.validation import check_actor, check_id

__all__ = ["ACTOR_KEY", "AsyncEventlogSaver", "EventlogSaver", "FENCED_KEY", "NotRunning",
           "SUBJECT_KEY", "WrongThread"]

ACTOR_KEY = "actor"
"""The ``configurable`` key naming the principal one call's put or writes are recorded as
appended by (the approver of a ``Command(resume=...)``, say), whatever the saver's."""

SUBJECT_KEY = "subject"
"""The ``configurable`` key naming the subject whose data key seals one call's put or
writes on an encrypted log (a customer id shared by many threads, so that erasing the
customer erases them all), whatever the saver's ``subject``; none named, the thread is
its own subject."""

FENCED_KEY = "eventlog_fenced"
"""The ``configurable`` key that fences (True) or unfences (False) one call's put or
writes, whatever the saver's ``fenced``."""

R = TypeVar("R")

_MEMO_SERDES = (StrictSerializer, JsonPlusSerializer)
"""Serializers whose bytes for a LangChain message `MessageMemo` knows to be a function
of its fields (LangGraph's; an application's own serde is always called)."""


class AsyncEventlogSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer over an open log (`open_log`'s `OpenLog`, which the application
    owns); it works on the log's thread store (``log.threads``).

    Every `BaseCheckpointSaver` method is implemented, async and sync, including the
    extended capabilities ``delete_for_runs``, ``copy_thread`` and ``prune``.
    """

    def __init__(
        self, log: OpenLog, *, tenant_id: str = "default",
        serde: SerializerProtocol | None = None,
        allowed_msgpack_modules: AllowedTypes = None,
        fenced: bool = False,
        actor: str | None = None, elements: bool = True, subject: str | None = None,
    ) -> None:
        super().__init__(serde=strict_serde(serde, allowed_msgpack_modules))
        self.subject = None if subject is None else check_id("subject", subject)
        self.fenced = _check_fenced("fenced", fenced)
        self.actor = None if actor is None else check_actor(actor)
        self.elements = _check_fenced("elements", elements)
        self.log = log
        self._threads: ThreadCheckpoints = log.threads
        self.tenant_id = check_id("tenant_id", tenant_id)
        self.loop: asyncio.AbstractEventLoop | None = _current_loop()
        self._claims = ThreadClaims(log, self.tenant_id, LANGGRAPH)
        self._memo = MessageMemo()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, url: str, *, tenant_id: str = "default", serde: SerializerProtocol | None = None,
        allowed_msgpack_modules: AllowedTypes = None, fenced: bool = False,
        elements: bool = True, subject: str | None = None, **open_log_options: Any,
    ) -> AsyncIterator[AsyncEventlogSaver]:
        """Open the log at ``url`` (any URL `open_log` takes; ``schema=`` and the other
        options pass through), yield a saver over it, close the log on exit."""
        async with open_log(url, **open_log_options) as log:
            yield cls(log, tenant_id=tenant_id, serde=serde,
                      allowed_msgpack_modules=allowed_msgpack_modules, fenced=fenced,
                      elements=elements, subject=subject)

    # -- async: the implementation -------------------------------------------------------

    @traced("eventlog.langgraph.aget_tuple", _spans.langgraph_config)
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names, else the latest of its thread and namespace."""
        thread_id, namespace = _thread(config)
        found = await self._on_loop(self._threads.get(
            self.tenant_id, thread_id, get_checkpoint_id(config), namespace=namespace
        ))
        return None if found is None else self._tuple(found)

    @traced("eventlog.langgraph.aget_delta_channel_history", _spans.langgraph_config)
    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """What `DeltaChannel` replays (LangGraph's beta): per channel, the writes of the
        config's checkpoint's ancestors back to the nearest stored value (``seed``), in
        one statement on SQL backends however deep (`ThreadCheckpoints.history`)."""
        thread_id, namespace = _thread(config)
        checkpoint_id = get_checkpoint_id(config)
        if not channels:
            return {}
        if checkpoint_id is None:  # the latest, as LangGraph's savers read it
            latest = await self._on_loop(self._threads.page(
                self.tenant_id, thread_id, namespace=namespace, limit=1, payloads=False))
            if not latest:
                return {channel: {"writes": []} for channel in channels}
            checkpoint_id = latest[0].checkpoint_id
        found = await self._on_loop(self._threads.history(
            self.tenant_id, thread_id, checkpoint_id, channels, namespace=namespace))
        result: dict[str, DeltaChannelHistory] = {}
        for channel in channels:
            history = found[channel]
            entry: DeltaChannelHistory = {"writes": [
                (write.task_id, channel, self._load(write.value))
                for write in history.writes if write.value is not None]}
            if history.seed is not None:
                entry["seed"] = self._load(history.seed)
            result[channel] = entry
        return result

    @traced_iteration("eventlog.langgraph.alist", _spans.langgraph_config)
    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first; ``config=None`` lists every thread of the tenant."""
        if limit is not None and limit < 1:
            return
        thread_id = namespace = checkpoint_id = None
        if config is not None:
            thread_id = str(config["configurable"]["thread_id"])
            namespace = config["configurable"].get("checkpoint_ns")
            checkpoint_id = get_checkpoint_id(config)
        found = await self._on_loop(self._threads.page(
            self.tenant_id, thread_id, namespace=namespace, checkpoint_id=checkpoint_id,
            before=None if before is None else get_checkpoint_id(before),
            limit=limit, metadata=filter,
        ))
        for checkpoint in found:
            if thread_id is None and _foreign(checkpoint):
                continue  # another framework's workflow in the tenant: not a LangGraph thread
            yield self._tuple(checkpoint)

    @traced("eventlog.langgraph.aput", _spans.langgraph_config)
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (a put of an existing id is that checkpoint again)."""
        thread_id, namespace = _thread(config)
        state: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = state.pop("channel_values", None) or {}
        stored = get_serializable_checkpoint_metadata(config, metadata)
        run = stored.get("run_id")
        step = stored.get("step")
        actor, subject = self._actor(config), self._subject(config)
        await self._on_loop(self._claims.check(thread_id))
        channels = self._channels(checkpoint["channel_versions"], new_versions, values,
                                  (thread_id, namespace))
        if _versions_restorable(state, channels):
            # The put's versions are these: read back, they are put back (`_tuple`).
            del state["channel_versions"]
        put = self._threads.put(
            self.tenant_id, thread_id, checkpoint["id"], namespace=namespace,
            state=self._dump(state), channels=channels,
            parent_id=get_checkpoint_id(config),
            run_key=None if run is None else str(run),
            step=step if isinstance(step, int) and not isinstance(step, bool) else None,
            metadata=cast(dict[str, Any], stored), fenced=self._fenced(config),
        )
        await self._on_loop(acting(self.log, actor, sealing(self.log, subject, put)))
        return _config(thread_id, namespace, checkpoint["id"])

    @traced("eventlog.langgraph.aput_writes", _spans.langgraph_config)
    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against the config's checkpoint."""
        thread_id, namespace = _thread(config)
        indexed = [
            (WRITES_IDX_MAP.get(channel, index), channel, self._value(value))
            for index, (channel, value) in enumerate(writes)
        ]
        actor = self._actor(config)
        await self._on_loop(acting(self.log, actor, sealing(
            self.log, self._subject(config), self._threads.put_writes(
                self.tenant_id, thread_id, config["configurable"]["checkpoint_id"], task_id,
                indexed, namespace=namespace, task_path=task_path,
                fenced=self._fenced(config)))))

    @traced("eventlog.langgraph.adelete_thread", _spans.langgraph_thread)
    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in every namespace."""
        await self._on_loop(self._claims.check(str(thread_id)))
        await self._on_loop(self._threads.delete_thread(self.tenant_id, str(thread_id)))

    @traced("eventlog.langgraph.adelete_for_runs")
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata run_id is listed."""
        await self._on_loop(self._threads.delete_runs(self.tenant_id, [str(r) for r in run_ids]))

    @traced("eventlog.langgraph.acopy_thread", _spans.langgraph_thread)
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to another thread."""
        for thread_id in (str(source_thread_id), str(target_thread_id)):
            await self._on_loop(self._claims.check(thread_id))
        await self._on_loop(sealing(self.log, self.subject, self._threads.copy_thread(
            self.tenant_id, str(source_thread_id), str(target_thread_id)
        )))

    @traced("eventlog.langgraph.aprune", _spans.langgraph_threads)
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's latest checkpoint; ``delete``: all go."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        for thread_id in thread_ids:
            await self._on_loop(self._claims.check(str(thread_id)))
            await self._on_loop(self._threads.prune(
                self.tenant_id, str(thread_id), keep_latest=1 if strategy == "keep_latest" else 0
            ))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded increasing versions with a random tail, like LangGraph's savers."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- sync: the async methods run on the saver's loop ---------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._block(self.aget_tuple(config), "get_tuple")

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._block(self.aget_delta_channel_history(config=config, channels=channels),
                           "get_delta_channel_history")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        found = self._block(_collect(self.alist(
            config, filter=filter, before=before, limit=limit
        )), "list")
        return iter(found)

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._block(self.aput(config, checkpoint, metadata, new_versions), "put")

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        self._block(self.aput_writes(config, writes, task_id, task_path), "put_writes")

    def delete_thread(self, thread_id: str) -> None:
        self._block(self.adelete_thread(thread_id), "delete_thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._block(self.adelete_for_runs(run_ids), "delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._block(self.acopy_thread(source_thread_id, target_thread_id), "copy_thread")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._block(self.aprune(thread_ids, strategy=strategy), "prune")

    # -- helpers -------------------------------------------------------------------------

    def _actor(self, config: RunnableConfig) -> str | None:
        return chosen_actor(self.log, config["configurable"].get(ACTOR_KEY), self.actor,
                            f'configurable["{ACTOR_KEY}"]')

    def _subject(self, config: RunnableConfig) -> str | None:
        given = config["configurable"].get(SUBJECT_KEY)
        if given is None:
            return self.subject
        return check_id(f'configurable["{SUBJECT_KEY}"]', given)

    def _fenced(self, config: RunnableConfig) -> bool:
        return _check_fenced(FENCED_KEY, config["configurable"].get(FENCED_KEY, self.fenced))

    def _block(self, coroutine: Coroutine[Any, Any, R], method: str) -> R:
        return run_blocking(self.loop, coroutine, method, "a" + method)

    async def _on_loop(self, coroutine: Coroutine[Any, Any, R]) -> R:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return await on_loop(self.loop, coroutine)

    def _channels(
        self, versions: ChannelVersions, new_versions: ChannelVersions, values: dict[str, Any],
        thread: tuple[str, str],
    ) -> dict[str, ChannelValue]:
        """Each channel at its version, with its value only where the version is new: an
        unchanged channel names the value an earlier checkpoint stored. Like LangGraph's
        own savers, a new version without a value (an emptied channel) carries nothing.
        ``thread``: its id and namespace (what a list put last is remembered by)."""
        channels: dict[str, ChannelValue] = {}
        for name, version in versions.items():
            if name not in new_versions:
                channels[name] = ChannelValue(str(version))
            elif name in values:
                channels[name] = ChannelValue(str(new_versions[name]),
                                              self._value(values[name], (*thread, name)))
        return channels

    def _value(self, value: Any, channel: tuple[str, str, str] | None = None
               ) -> Payload | Elements:
        """A value as stored: a ``list`` element by element (each message of a chat
        stored once per tenant however many checkpoints carry it), else whole.
        ``channel``: the thread, namespace and channel a put's value is of."""
        if self.elements and type(value) is list:
            if type(self.serde) not in _MEMO_SERDES:
                return Elements(tuple(self._dump(item) for item in value))
            # LangGraph's own encoding: a message unchanged since it was last serialized
            # is not serialized again (`MessageMemo`), so a put costs what is new.
            if channel is None:
                return Elements(self._memo.dump_all(value, self._dump))
            return Elements(self._memo.dump_list(channel, value, self._dump))
        return self._dump(value)

    def _dump(self, value: Any) -> Payload:
        encoding, data = self.serde.dumps_typed(value)
        return Payload(encoding, data)

    def _load(self, payload: Payload | Elements) -> Any:
        if isinstance(payload, Elements):
            if payload.items and all(item.encoding == "msgpack" for item in payload.items):
                # One msgpack array of the stored items: one decode, as a whole list was.
                return self.serde.loads_typed(("msgpack", _msgpack_array(payload.items)))
            return [self._load(item) for item in payload.items]
        return self.serde.loads_typed((payload.encoding, payload.data))

    def _tuple(self, found: ThreadCheckpoint) -> CheckpointTuple:
        assert found.state is not None
        refuse_foreign(self.tenant_id, found.thread_id, found.state.encoding, LANGGRAPH)
        checkpoint = self._load(found.state)
        if "channel_versions" not in checkpoint:
            # Stored without them (`_versions_restorable`): the put's own versions.
            checkpoint["channel_versions"] = dict(found.versions or {})
        checkpoint["channel_values"] = {
            name: self._load(payload) for name, payload in (found.channels or {}).items()
        }
        return CheckpointTuple(
            config=_config(found.thread_id, found.namespace, found.checkpoint_id),
            checkpoint=checkpoint,
            metadata=cast(CheckpointMetadata, found.metadata),
            parent_config=None if found.parent_id is None
            else _config(found.thread_id, found.namespace, found.parent_id),
            pending_writes=[
                (write.task_id, write.channel, self._load(write.value))
                for write in found.writes or []
                if write.value is not None
            ],
        )


class EventlogSaver(AsyncEventlogSaver):
    """The saver for programs without an event loop (``graph.invoke``, ``graph.stream``).

    `from_conn_string` runs the log on a private loop in a background thread; the sync
    methods wait for it from the caller's thread, and the async ones (should an async
    graph use this saver) are forwarded to it.
    """

    @classmethod
    @contextmanager
    def from_conn_string(  # type: ignore[override]  # sync, where the parent is async
        cls, url: str, *, tenant_id: str = "default", serde: SerializerProtocol | None = None,
        allowed_msgpack_modules: AllowedTypes = None, fenced: bool = False,
        elements: bool = True, subject: str | None = None, **open_log_options: Any,
    ) -> Iterator[EventlogSaver]:
        """Open the log at ``url`` on a background loop, yield a saver, close it on exit."""
        background = BackgroundLoop()
        try:
            manager = open_log(url, **open_log_options)
            log = background.run(manager.__aenter__())
            try:
                saver = cls(log, tenant_id=tenant_id, serde=serde,
                            allowed_msgpack_modules=allowed_msgpack_modules, fenced=fenced,
                            elements=elements, subject=subject)
                saver.loop = background.loop
                yield saver
            finally:
                background.run(manager.__aexit__(None, None, None))
        finally:
            background.stop()


def _versions_restorable(state: dict[str, Any], channels: dict[str, ChannelValue]) -> bool:
    """Whether the state can be stored without its ``channel_versions``: they are
    strings (LangGraph's savers' and ours) and exactly the versions the put records
    (`ThreadCheckpoint.versions` reads them back), and the put stores a value, so its
    event is stored compact (migration 0032: the code before it refuses the log, and
    would otherwise find a checkpoint without versions). Their ~60 bytes a channel were
    stored three times a put: in the state, in the event, and in the view row."""
    versions = state.get("channel_versions")
    return (ThreadCheckpointPut.compact and isinstance(versions, dict)
            and len(versions) == len(channels)
            and any(channel.value is not None for channel in channels.values())
            and all(type(version) is str and channels.get(name) is not None
                    and channels[name].version == version
                    for name, version in versions.items()))


def _msgpack_array(items: Sequence[Payload]) -> bytes:
    """The msgpack array whose elements are these items' msgpack bytes."""
    count = len(items)
    if count < 16:
        header = bytes((0x90 | count,))
    elif count < 2**16:
        header = b"\xdc" + count.to_bytes(2, "big")
    else:
        header = b"\xdd" + count.to_bytes(4, "big")
    return header + b"".join(item.data for item in items)


def _check_fenced(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(field, f"must be True or False, not {value!r}")
    return value


def _foreign(found: ThreadCheckpoint) -> bool:
    return found.state is not None and found.state.encoding == MAF_ENCODING


def _thread(config: RunnableConfig) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), configurable.get("checkpoint_ns", "") or ""


def _config(thread_id: str, namespace: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {
        "thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint_id,
    }}


async def _collect(items: AsyncIterator[CheckpointTuple]) -> list[CheckpointTuple]:
    return [item async for item in items]


def _current_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
