"""The fenced-thread decisions, without a database (`eventlog.checkpoints.thread_fence`)."""

from __future__ import annotations

import pytest

from eventlog.checkpoints.thread_fence import (
    Head,
    needs_removals,
    refusal,
    removed_high_waters,
)
from eventlog.events.threads import (
    CheckpointKey,
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadDeleted,
    ThreadWritesPut,
)

HEAD: Head = ("c2", "c1")


def put(checkpoint_id: str, parent_id: str | None) -> ThreadCheckpointPut:
    return ThreadCheckpointPut(
        thread_id="t", namespace="", checkpoint_id=checkpoint_id, parent_id=parent_id,
        state_encoding="json", state_digest="00" * 32, state_size=2,
    )


def write(checkpoint_id: str) -> ThreadWritesPut:
    return ThreadWritesPut(thread_id="t", namespace="", checkpoint_id=checkpoint_id,
                           task_id="task", writes=[])


@pytest.mark.parametrize(("event", "head", "removed"), [
    (put("c3", "c2"), HEAD, None),           # a child of the head
    (put("c2", "c1"), HEAD, None),           # the head put again
    (put("c1", None), None, None),           # a new thread's first put
    (put("c9", None), None, "c5"),           # a new start after a delete
    (write("c2"), HEAD, None),               # writes to the head
    (write("c3"), HEAD, None),               # to a checkpoint still being put
    (write("c9"), None, "c5"),               # to a new start's first checkpoint
])
def test_accepted(event: ThreadCheckpointPut | ThreadWritesPut, head: Head | None,
                  removed: str | None) -> None:
    """What is based on the head (or starts a thread) is accepted."""
    assert refusal(event, head, removed) is None


@pytest.mark.parametrize(("event", "head", "removed", "reason"), [
    (put("c3", "c1"), HEAD, None, "its parent is not the head"),
    (put("c3", None), HEAD, None, "a put without a parent"),
    (put("c2", None), HEAD, None, "the head put again with another parent"),
    (put("c0", "c2"), HEAD, None, "sorts before the head"),
    (put("c3", "c2"), None, None, "the namespace holds no checkpoint"),
    (put("c4", None), None, "c5", "a late first put"),
    (write("c1"), HEAD, None, "older than the head"),
    (write("c2"), None, "c2", "was removed"),
    (write("c3"), ("c1", None), "c3", "was removed"),
])
def test_refused(event: ThreadCheckpointPut | ThreadWritesPut, head: Head | None,
                 removed: str | None, reason: str) -> None:
    """A fork, a stale writer and a late write are each refused, saying why."""
    assert reason in (refusal(event, head, removed) or "")


@pytest.mark.parametrize(("event", "head", "expected"), [
    (put("c3", "c2"), HEAD, False),
    (put("c1", None), None, True),
    (put("c3", "c2"), None, False),
    (write("c2"), HEAD, False),
    (write("c1"), HEAD, False),
    (write("c3"), HEAD, True),
    (write("c3"), None, True),
])
def test_removals_are_read_only_where_they_decide(
    event: ThreadCheckpointPut | ThreadWritesPut, head: Head | None, expected: bool
) -> None:
    """A child of the head, or a write to it or to an older id, needs no removals."""
    assert expected == needs_removals(event, head)


def test_removed_high_waters_take_the_highest_id_each_removal_took() -> None:
    """Deletes name each namespace's head; removals each id they removed."""
    events = [
        ThreadDeleted(thread_id="t", checkpoints=3, heads={"": "c3", "child:1": "s1"}),
        ThreadCheckpointsRemoved(thread_id="t", reason="prune", removed=[
            CheckpointKey(namespace="", checkpoint_id="c2"),
            CheckpointKey(namespace="child:2", checkpoint_id="s7")]),
        put("c9", None),
    ]
    assert {"": "c3", "child:1": "s1", "child:2": "s7"} == removed_high_waters(events)
