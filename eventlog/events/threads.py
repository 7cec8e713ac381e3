"""The events of thread checkpoints (`ThreadCheckpoints`; no store is loaded to import
them). Tags are stored forever: never rename one.

A *thread* is the stream ``thread:<thread_id>`` of one tenant. It holds checkpoints in any
number of namespaces (LangGraph's ``checkpoint_ns``: a subgraph's checkpoints live in the
parent's thread under their own namespace), the pending writes attached to each
checkpoint, and the tombstones that remove them. Unlike a session (`CheckpointCreated`),
a thread checkpoint is addressed by its id: a second put of the same id *is* that
checkpoint again, and the views keep one row per id (the log still keeps every put).

Every payload (the checkpoint's own state, each channel value, each write's value) is a
content-addressed blob attached in the same append; events carry only digests, so the
hash chain covers the payloads and a tombstone can purge them without breaking it.
All are registered in `eventlog.default_registry` when this module is imported (which
`projections` does, so every log can decode them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import msgspec

from eventlog.events import SEALED, Event, record_key, register_event
from eventlog.events.checkpoints import HexDigest

THREAD_STREAM_PREFIX = "thread:"
"""A thread's events go to the stream ``thread:<thread id>``."""


class ThreadEvent(Event, frozen=True, kw_only=True, omit_defaults=True):
    """An event of one thread: it belongs to the thread's stream and nowhere else.

    A field at its default is not written (``omit_defaults``): a put carries no empty
    namespace, base or element list, which was ~7 % of a LangGraph put's bytes. So the
    defaults of the thread events (and of the refs they hold) are part of the stored
    format: an event read back takes them again, and they never change.
    """

    thread_id: str

    def home_stream(self) -> str | None:
        """The thread's stream."""
        return THREAD_STREAM_PREFIX + self.thread_id


class BlobRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A channel's value at one version, stored as a blob by the put that carries it."""

    name: str
    encoding: str
    """The caller's label for how ``digest``'s bytes decode (LangGraph: the serde type)."""
    digest: HexDigest
    version: str = ""
    """The channel version this value is (LangGraph's); empty means the digest is the
    version (content-addressed channels)."""

    base: str = ""
    """Stored as elements (``encoding`` ``eventlog.elements``): the channel version whose
    value its manifest is a delta on (empty: a full manifest)."""
    elements: list[HexDigest] = msgspec.field(default_factory=list)
    """Stored as elements: the distinct element blobs its manifest adds, one reference
    each (what it keeps of its base, the base references)."""

    @property
    def channel_version(self) -> str:
        """The version this value is stored under."""
        return self.version or self.digest


class WriteRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One pending write: the value of ``channel`` at index ``idx`` of a task's writes."""

    idx: int
    channel: str
    encoding: str
    digest: HexDigest
    elements: list[HexDigest] = msgspec.field(default_factory=list)
    """Stored as elements (``encoding`` ``eventlog.elements``): the distinct element
    blobs of its manifest, one reference each."""


class CheckpointKey(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A checkpoint of a thread: its namespace and id."""

    namespace: str = ""
    checkpoint_id: str


class ValueKey(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A stored channel value of a thread: its namespace, channel and version."""

    namespace: str = ""
    channel: str
    version: str


@register_event
class ThreadCheckpointPut(ThreadEvent, tag="thread_checkpoint_put", frozen=True, kw_only=True):
    """A checkpoint was put to a thread (a put of an existing id replaces it in the views).

    ``versions`` names the version of every channel value the checkpoint carries; the
    values themselves are stored once per (namespace, channel, version): ``channels`` are
    the ones this put stores (LangGraph: the channels in ``new_versions``), the others were
    stored by an earlier put of the thread. An unchanged channel is never stored again.
    """

    namespace: str = ""
    checkpoint_id: str
    parent_id: str | None = None
    run_key: str | None = None
    """The free-form run this checkpoint belongs to (LangGraph: ``metadata["run_id"]``)."""
    step: int | None = None
    state_encoding: str
    state_digest: HexDigest
    state_size: int
    channels: list[BlobRef] = msgspec.field(default_factory=list)
    metadata: Annotated[dict[str, Any], SEALED] = msgspec.field(default_factory=dict)
    versions: dict[str, str] = msgspec.field(default_factory=dict)
    subject: str | None = None
    """The subject the caller named (as `CheckpointCreated.subject`); None when it is the
    thread's own id."""
    versions_named: bool = False
    """Only in stored bytes (`stored_body`): each channel's version is left out, being
    the one ``versions`` names for it. Read back, the versions are filled in and this is
    False again, so a put reads back equal to the one appended."""
    version_list: list[str] = msgspec.field(default_factory=list)
    """Only in stored bytes, with ``versions_named``: each distinct version once, in the
    order ``versions`` first names it (LangGraph gives every channel a step changes the
    same new version); ``versions_at`` then names each channel's by its index. Read
    back, ``versions`` is filled in (in its order) and both are empty again."""
    versions_at: dict[str, int] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.version_list or self.versions_at:
            # A stored compact put: its versions, each distinct one written once.
            listed, at = self.version_list, self.versions_at
            if (not self.versions_named or self.versions
                    or any(type(index) is not int or not 0 <= index < len(listed)
                           for index in at.values())):
                raise ValueError("versions_at names a version version_list does not hold, "
                                 "or the put names its versions twice")
            msgspec.structs.force_setattr(self, "versions", {
                name: listed[index] for name, index in at.items()})
            msgspec.structs.force_setattr(self, "version_list", [])
            msgspec.structs.force_setattr(self, "versions_at", {})
        if self.versions_named:
            # A stored compact put: each channel takes the version ``versions`` names.
            missing = [ref.name for ref in self.channels
                       if ref.version or ref.name not in self.versions]
            if missing:
                raise ValueError(f"channels {missing} carry a version of their own or have "
                                 "none in versions, in a put whose versions are named")
            msgspec.structs.force_setattr(self, "channels", [
                msgspec.structs.replace(ref, version=self.versions[ref.name])
                for ref in self.channels])
            msgspec.structs.force_setattr(self, "versions_named", False)

    compact: ClassVar[bool] = True
    """Whether puts are stored compact (`stored_body`). Only the migration tests turn it
    off, to write a log as the code before 0032 wrote it and then downgrade it."""

    def stored_body(self) -> dict[str, Any] | None:
        """The put as it is stored when each channel's version is the one ``versions``
        names for it (a LangGraph put's always is): without them (~60 bytes a channel:
        LangGraph's versions are 51 characters), ``versions_named`` saying so, and, when
        ``versions`` repeats a version, each distinct one written once (``version_list``,
        ``versions_at``). None (stored as it is) otherwise."""
        if not self.compact or not self.channels or any(
                not ref.version or self.versions.get(ref.name) != ref.version
                for ref in self.channels):
            return None
        body: dict[str, Any] = msgspec.to_builtins(self)
        for ref in body["channels"]:
            del ref["version"]
        body["versions_named"] = True
        listed = list(dict.fromkeys(self.versions.values()))
        if len(listed) < len(self.versions):
            index = {version: number for number, version in enumerate(listed)}
            del body["versions"]
            body["version_list"] = listed
            body["versions_at"] = {name: index[version]
                                   for name, version in self.versions.items()}
        return body

    def sealed_record(self) -> str:
        """The checkpoint's record: its thread's rows bind its metadata to its namespace
        and id."""
        return record_key(self.namespace, self.checkpoint_id)

    def blob_digests(self) -> tuple[bytes, ...]:
        """The checkpoint's state blob and the blob of each channel value it stores (and,
        for a value stored as elements, the element blobs its manifest adds)."""
        return (bytes.fromhex(self.state_digest),
                *(bytes.fromhex(digest) for channel in self.channels
                  for digest in (channel.digest, *channel.elements)))


@register_event
class ThreadWritesPut(ThreadEvent, tag="thread_writes_put", frozen=True, kw_only=True):
    """Pending writes of one task were attached to a checkpoint.

    The views keep the first write per (task, idx ≥ 0) and let a negative (special) index
    replace the earlier one; every write holds its payload's blob reference until its
    checkpoint or thread is removed.
    """

    namespace: str = ""
    checkpoint_id: str
    task_id: str
    task_path: str = ""
    writes: list[WriteRef]

    def blob_digests(self) -> tuple[bytes, ...]:
        """Each write's value blob (and, stored as elements, its elements' blobs)."""
        return tuple(bytes.fromhex(digest) for write in self.writes
                     for digest in (write.digest, *write.elements))


@register_event
class ThreadDeleted(ThreadEvent, tag="thread_deleted", frozen=True, kw_only=True):
    """Every checkpoint and write of the thread, in every namespace, was deleted."""

    checkpoints: int
    writes: int = 0
    released: dict[HexDigest, int] = msgspec.field(default_factory=dict)
    """The blob references the deletion gave up, by digest (what `verify` folds)."""
    heads: dict[str, str] = msgspec.field(default_factory=dict)
    """Each namespace's highest checkpoint id when it was deleted (empty in tombstones
    written before it was recorded): a fenced writer's late write to one of them, or to
    an older id, is refused (`eventlog.checkpoints.thread_fence`)."""

    def blob_releases(self) -> Mapping[bytes, int]:
        """The references given up."""
        return _releases(self.released)


@register_event
class ThreadCheckpointsRemoved(
    ThreadEvent, tag="thread_checkpoints_removed", frozen=True, kw_only=True
):
    """Some checkpoints of the thread (and their writes) were removed.

    ``reason`` is ``runs`` (a delete of runs, listed in ``run_keys``) or ``prune`` (keeping
    the latest ``keep`` per namespace).
    """

    reason: str
    removed: list[CheckpointKey]
    run_keys: list[str] = msgspec.field(default_factory=list)
    keep: int | None = None
    values: list[ValueKey] = msgspec.field(default_factory=list)
    """The stored channel values no remaining checkpoint of the thread carries."""
    released: dict[HexDigest, int] = msgspec.field(default_factory=dict)
    """The blob references the removal gave up, by digest (what `verify` folds)."""

    def blob_releases(self) -> Mapping[bytes, int]:
        """The references given up."""
        return _releases(self.released)


@register_event
class ThreadCopied(ThreadEvent, tag="thread_copied", frozen=True, kw_only=True):
    """The thread received a copy of another thread of the tenant.

    The copied checkpoints and writes follow in the same append as ordinary puts.
    """

    source_thread_id: str
    checkpoints: int
    writes: int = 0


class AdoptedCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint taken in from another store: its namespace, id and the time the
    source recorded for it (its own ``ts``, as the source wrote it)."""

    namespace: str = ""
    checkpoint_id: str
    ts: str = ""


@register_event
class ThreadAdopted(ThreadEvent, tag="thread_adopted", frozen=True, kw_only=True):
    """Checkpoints of the thread were adopted from another checkpoint store.

    The puts and writes that follow in the same append are what ``source`` held, written
    exactly as the framework's adapter writes them: this event is what says they were
    adopted, from where (``framework`` and ``source``, a URL without its password), and
    when each was first recorded there (``checkpoints[].ts``); the append's own time is
    when the adoption happened.
    """

    framework: str
    source: str
    checkpoints: list[AdoptedCheckpoint]
    writes: int = 0


def _releases(released: Mapping[str, int]) -> dict[bytes, int]:
    return {bytes.fromhex(digest): count for digest, count in released.items()}
