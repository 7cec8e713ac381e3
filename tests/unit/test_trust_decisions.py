"""The pure parts of issue 40 §3: a batch's state folded from its events (what retention
decides open batches from), a prefix's key range, and the two sealed envelope forms."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from eventlog.crypto._seal import MAGIC, MAGIC_RECORD, DataKey, Header, parse
from eventlog.events import interrupts as ev
from eventlog.events import record_key
from eventlog.storage.sql import prefix_end
from projections.interrupts import batch_state
from projections.views import SealedRow

_AT = datetime(2026, 1, 1, tzinfo=UTC)
_CREATED = ev.BatchCreated(batch_id="b", thread_id="th", checkpoint_id="c",
                           operation_name="pay", operation_version="1", interrupts=(),
                           approval_expires_at=_AT)
_CLAIMED = ev.BatchClaimed(batch_id="b", generation=1, token_digest="d" * 64,
                           lease_expires_at=_AT, responses=())


@pytest.mark.parametrize(("events", "expected"), [
    ([_CREATED], ("th", "pending")),
    ([_CREATED, _CLAIMED], ("th", "claimed")),
    ([_CREATED, _CLAIMED, ev.BatchReleased(batch_id="b", generation=1)], ("th", "pending")),
    ([_CREATED, _CLAIMED, ev.EffectStarted(batch_id="b", generation=1),
      ev.EffectUnresolved(batch_id="b", generation=1)], ("th", "unresolved")),
    ([_CREATED, ev.ApprovalExpired(batch_id="b")], ("th", "expired")),
    ([_CREATED, ev.ApprovalExpired(batch_id="b"), ev.BatchRetired(batch_id="b")], None),
    ([_CLAIMED], None),
])
def test_a_batch_state_is_the_fold_of_its_events(events: list[ev.Event],
                                                  expected: tuple[str, str] | None) -> None:
    """A batch's thread and state after its events, as its view row folds them; None
    when retired or never created."""
    assert expected == batch_state(events)


def test_a_prefix_end_bounds_exactly_the_prefix() -> None:
    """Every text starting with the prefix sorts in [prefix, prefix_end); the next
    text that does not, at or after it."""
    end = prefix_end("interrupt-batch:")
    inside = ["interrupt-batch:", "interrupt-batch:\U0010ffff", "interrupt-batch:zz"]
    assert ("interrupt-batch;", True, False) == (
        end, all("interrupt-batch:" <= text < end for text in inside),
        "interrupt-batch;" < end)


def test_an_envelope_of_either_form_parses_and_opens() -> None:
    """The first form (no record) and the second (a record) each parse to their header
    and open under their own associated data; the second's record cannot be changed."""
    key = DataKey.new()
    first = key.seal("t", Header("s", 1, "session:s", "k"), b"1", derived=False)
    second = key.seal("t", Header("s", 1, "session:s", "k", record_key("c1")), b"2",
                      derived=False)
    one, two = parse(first), parse(second)
    assert one is not None
    assert two is not None
    moved = second.replace(record_key("c1").encode(), record_key("c2").encode())
    assert ((MAGIC, MAGIC_RECORD), "", '["c1"]', b"1", b"2") == (
        (first[:5], second[:5]), one[0].record, two[0].record,
        key.open("t", first, one[1]), key.open("t", second, two[1]))
    from cryptography.exceptions import InvalidTag

    elsewhere = parse(moved)
    assert elsewhere is not None
    with pytest.raises(InvalidTag):
        key.open("t", moved, elsewhere[1])


def test_a_sealed_row_binding_reads_its_row() -> None:
    """A binding gives the row's stream, record and subject, or None without its columns."""
    binding = SealedRow("session:", "session_id", ("checkpoint_id",), "subject")
    row = {"session_id": "s", "checkpoint_id": "c", "subject": None}
    assert (("session:s", '["c"]', None), None) == (
        binding.expected(row), binding.expected({"session_id": "s"}))
