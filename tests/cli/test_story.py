"""The timeline's decisions (duplicates, lanes, wording of claims), without a database."""

from __future__ import annotations

import uuid
from datetime import timedelta

from eventlog import Event, default_registry
from eventlog.checkpoints import CheckpointCreated, SessionDeleted
from eventlog.cli.story import build_timeline
from eventlog.events import interrupts as ev
from eventlog.interrupts import Resume
from eventlog.records import RecordedEvent
from tests.cli.helpers import START
from tests.events import Noted

RUN_1, RUN_2 = uuid.UUID(int=1), uuid.UUID(int=2)
DIGEST = "ab" * 32


def recorded(*events: Event) -> list[RecordedEvent]:
    """``events`` as the log would hand them back, at positions 1, 2, 3 …"""
    result = []
    for position, event in enumerate(events, start=1):
        tag, data = default_registry.encode(event)
        result.append(RecordedEvent(
            position=position, event_id=uuid.uuid4(), tenant_id="t", stream_id="s",
            version=position, recorded_at=START + timedelta(seconds=position), type=tag,
            data=data, prev_hash=bytes(32), hash=bytes(32), event=event))
    return result


def checkpoint(run: uuid.UUID, checkpoint_id: str, step: int) -> CheckpointCreated:
    """A checkpoint event of session ``s``."""
    return CheckpointCreated(session_id="s", run_id=run, checkpoint_id=checkpoint_id,
                             step=step, state_digest=DIGEST, state_encoding="json",
                             state_size=3)


def test_the_same_checkpoint_id_again_is_a_duplicate() -> None:
    """A replayed step that reuses its checkpoint id points at the earlier record."""
    story = build_timeline(recorded(checkpoint(RUN_1, "a", 0), checkpoint(RUN_2, "a", 0)))
    assert [None, 1] == [entry.duplicate_of for entry in story.entries]
    assert "same checkpoint id as #1" in story.entries[1].details
    assert (1, ["run 1", "run 2"]) == (story.duplicates, [e.lane for e in story.entries])


def test_a_replayed_step_with_a_new_id_is_a_duplicate() -> None:
    """A new run writing a step an earlier run wrote (new id) replays it."""
    story = build_timeline(recorded(
        checkpoint(RUN_1, "a", 0), checkpoint(RUN_1, "b", 1), checkpoint(RUN_2, "c", 1)))
    assert [None, None, 2] == [entry.duplicate_of for entry in story.entries]
    assert "replays step 1 of run 1 (#2)" in story.entries[2].details


def test_a_tombstone_starts_the_history_afresh() -> None:
    """After a delete, writing the same id or step again is not a duplicate."""
    story = build_timeline(recorded(
        checkpoint(RUN_1, "a", 0), SessionDeleted(session_id="s", checkpoints=1),
        checkpoint(RUN_2, "a", 0)))
    assert ([None, None, None], 1) == ([e.duplicate_of for e in story.entries],
                                       story.tombstones)
    assert ("session", "tombstone") == (story.entries[1].lane, story.entries[1].what)


def test_batches_are_lanes_and_claims_name_generations_not_tokens() -> None:
    """Each batch gets a lane; a claim shows its generation and answers, never the
    token digest."""
    story = build_timeline(recorded(
        ev.BatchCreated(batch_id="b1", thread_id="s", checkpoint_id="a",
                        operation_name="op", operation_version="1", interrupts=(),
                        approval_expires_at=START),
        ev.BatchClaimed(batch_id="b1", generation=3, token_digest=DIGEST,
                        lease_expires_at=START,
                        responses=(Resume(interrupt_id="q", status="resolved"),)),
        ev.EffectStarted(batch_id="b1", generation=3),
    ))
    claim = story.entries[1]
    assert (["batch 1"] * 3, "claimed") == ([e.lane for e in story.entries], claim.what)
    assert "generation 3" in claim.details
    assert "q=resolved" in claim.details
    assert DIGEST not in claim.details
    assert "(redacted)" == claim.fields["token_digest"]
    assert "dispatch marker" in story.entries[2].details


def test_other_events_are_summarised_by_their_fields() -> None:
    """An event the timeline has no words for shows its type and fields."""
    entry = build_timeline(recorded(Noted(text="hello", number=4))).entries[0]
    assert ("test.noted", "text=hello number=4") == (entry.what, entry.details)
