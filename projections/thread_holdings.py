"""What a thread's live checkpoints, values and writes hold, folded from its own events.

A removal gives up exactly the blob references of what it removes: each put's state
blob (every put of a checkpoint id, a retried one too), each value a put stored (with the
element blobs its manifest added) and each write an event carried (the one that lost to
an earlier write of the same task and idx too). Until issue 41 three view tables
(``thread_checkpoint_records``, ``thread_value_records``, ``thread_write_records``) kept
one row per such reference, written by every put and every write so that a removal, rare,
could read them. They are gone (migration 0025): a removal folds the thread's
stream with `ThreadHoldings` instead (`eventlog.checkpoints.holdings.fold_thread`), at
the version it is fenced on, so the write path writes none of them and a removal
decides from checked events, not from rows anyone could edit.

The fold is the old tables' fold, kept in memory: keyed the same way, deleted by the same
tombstones (`ThreadDeleted` all, `ThreadCheckpointsRemoved` the listed checkpoints' and
values'), so what it holds is what those tables held at the same version.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from eventlog.events import Event
from eventlog.events.threads import (
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadDeleted,
    ThreadWritesPut,
)

CheckpointAt = tuple[str, str]
"""(namespace, checkpoint id)."""
ValueAt = tuple[str, str, str]
"""(namespace, channel, channel version)."""


class ThreadHoldings:
    """The blob references a thread's remaining puts, values and writes hold."""

    def __init__(self) -> None:
        self.checkpoints: dict[CheckpointAt, list[bytes]] = {}
        """Each checkpoint's state blobs (one per put of its id) and its writes' blobs."""
        self.values: dict[ValueAt, list[bytes]] = {}
        """Each stored value's blob (once per put that stored it) and its elements'."""

    def fold(self, event: Event) -> None:
        """Take in one event of the thread's stream (any other kind changes nothing)."""
        if isinstance(event, ThreadCheckpointPut):
            key = (event.namespace, event.checkpoint_id)
            self.checkpoints.setdefault(key, []).append(bytes.fromhex(event.state_digest))
            for ref in event.channels:
                held = self.values.setdefault(
                    (event.namespace, ref.name, ref.channel_version), [])
                held.extend(bytes.fromhex(digest) for digest in (ref.digest, *ref.elements))
        elif isinstance(event, ThreadWritesPut):
            held = self.checkpoints.setdefault((event.namespace, event.checkpoint_id), [])
            held.extend(bytes.fromhex(digest) for write in event.writes
                        for digest in (write.digest, *write.elements))
        elif isinstance(event, ThreadDeleted):
            self.checkpoints.clear()
            self.values.clear()
        elif isinstance(event, ThreadCheckpointsRemoved):
            for checkpoint in event.removed:
                self.checkpoints.pop((checkpoint.namespace, checkpoint.checkpoint_id), None)
            for value in event.values:
                self.values.pop((value.namespace, value.channel, value.version), None)

    def copy(self) -> ThreadHoldings:
        """An independent copy (folding into it leaves this one as it is)."""
        copied = ThreadHoldings()
        copied.checkpoints = {key: list(held) for key, held in self.checkpoints.items()}
        copied.values = {key: list(held) for key, held in self.values.items()}
        return copied

    def __bool__(self) -> bool:
        return bool(self.checkpoints) or bool(self.values)

    def everything(self) -> Iterator[bytes]:
        """Every reference held (a digest once per reference)."""
        for held in (*self.checkpoints.values(), *self.values.values()):
            yield from held

    def of_checkpoints(self, keys: Iterable[CheckpointAt]) -> Iterator[bytes]:
        """The references the checkpoints ``keys`` hold (their puts' and writes')."""
        for key in keys:
            yield from self.checkpoints.get(key, ())

    def of_values(self, keys: Iterable[ValueAt]) -> Iterator[bytes]:
        """The references the stored values ``keys`` hold."""
        for key in keys:
            yield from self.values.get(key, ())

    def value_holding(self, digests: set[bytes]) -> set[ValueAt]:
        """The stored values that hold a reference to any of ``digests``."""
        return {key for key, held in self.values.items()
                if any(digest in digests for digest in held)}

