"""The checkpoint store's pure decisions and its UUIDv7, tested without any backend."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from eventlog import InvalidInput, ids
from eventlog.checkpoints.decisions import (
    MAX_SESSION_ID_LENGTH,
    CheckedRecord,
    EncodedState,
    check_session_id,
    decode_state,
    encode_state,
    non_finite_path,
    normalise_metadata,
    parent_required,
    plan_delete,
    session_stream,
)
from eventlog.ids import uuid7
from eventlog.validation import MAX_ID_LENGTH


@pytest.fixture(autouse=True)
def _restore_uuid7_state() -> Iterator[None]:
    """Tests that mint ids in the future must not leave later ids stuck there."""
    saved = ids._last
    yield
    ids._last = saved


def test_uuid7_has_version_7_and_the_rfc_variant() -> None:
    """A minted id is a version-7 UUID of the RFC 9562 variant."""
    minted = uuid7()
    assert (7, uuid.RFC_4122) == (minted.version, minted.variant)


def test_uuid7_starts_with_the_unix_milliseconds() -> None:
    """The first 48 bits are the Unix time in milliseconds."""
    before = time.time_ns() // 1_000_000
    minted = uuid7()
    after = time.time_ns() // 1_000_000
    assert before <= minted.int >> 80 <= after


def test_uuid7_from_a_fixed_instant_encodes_that_instant() -> None:
    """An explicit time (after every id minted so far) is the id's timestamp."""
    future = (time.time_ns() // 1_000_000 + 10_000) * 1_000_000
    assert future // 1_000_000 == uuid7(now_ns=future).int >> 80


def test_uuid7s_minted_in_one_millisecond_still_increase() -> None:
    """Ids minted at the same instant are strictly increasing (counter, not chance)."""
    instant = (time.time_ns() // 1_000_000 + 20_000) * 1_000_000
    minted = [uuid7(now_ns=instant) for _ in range(1000)]
    assert sorted(set(minted)) == minted


def test_uuid7s_increase_when_the_clock_goes_back() -> None:
    """An id minted after the clock stepped back still sorts after the earlier ones."""
    late = uuid7(now_ns=(time.time_ns() // 1_000_000 + 30_000) * 1_000_000)
    assert late < uuid7(now_ns=0)


def test_uuid7_sorts_as_text_in_minting_order() -> None:
    """The hex text of successive ids sorts like the ids (ids are compared as strings)."""
    minted = [str(uuid7()) for _ in range(500)]
    assert sorted(minted) == minted


def test_uuid7_rolls_into_the_next_millisecond_when_the_counter_is_spent() -> None:
    """After 2^74 ids in one millisecond the next id borrows the following millisecond."""
    instant = time.time_ns() // 1_000_000 + 40_000
    ids._last = (instant, (1 << 74) - 1)
    assert instant + 1 == uuid7(now_ns=instant * 1_000_000).int >> 80


def test_session_stream_prefixes_the_session_id() -> None:
    """A session's stream id is ``session:<id>``, which fits the log's id limit."""
    longest = "s" * MAX_SESSION_ID_LENGTH
    assert ("session:abc", MAX_ID_LENGTH) == (session_stream("abc"), len(session_stream(longest)))


def test_a_session_id_one_character_too_long_is_refused() -> None:
    """248 characters would not fit in the stream id: refused naming session_id."""
    with pytest.raises(InvalidInput) as raised:
        check_session_id("s" * (MAX_SESSION_ID_LENGTH + 1))
    assert "session_id" == raised.value.field


def test_bytes_states_are_stored_raw_and_json_states_encoded() -> None:
    """bytes-like states keep their bytes; anything else is stored as its JSON."""
    assert [EncodedState("bytes", b"ab"), EncodedState("bytes", b"cd"),
            EncodedState("json", b'{"a":[1,2]}')] == [
        encode_state(b"ab", 100), encode_state(bytearray(b"cd"), 100),
        encode_state({"a": [1, 2]}, 100),
    ]


def test_decode_state_inverts_encode_state() -> None:
    """What encode_state stores, decode_state gives back (JSON values and bytes)."""
    for state in ({"a": [1, None, "x"]}, [1.5, True], "text", 7, None, b"\x00\x01"):
        encoded = encode_state(state, 1000)
        assert state == decode_state(encoded.encoding, encoded.data)


def test_non_finite_path_points_at_the_first_nan() -> None:
    """The path names where the NaN or Infinity sits."""
    assert ("$.a[1].b", None) == (
        non_finite_path({"a": [1, {"b": float("nan")}]}), non_finite_path({"a": [1, None]})
    )


def test_a_state_with_null_but_no_nan_is_accepted() -> None:
    """A genuine null is not mistaken for an encoded NaN."""
    assert EncodedState("json", b"[null,1.0]") == encode_state([None, 1.0], 100)


def test_metadata_is_normalised_to_what_json_gives_back() -> None:
    """Tuples become lists and number keys become strings, as a reader will see them."""
    assert {"a": [1, 2], "1": "x"} == normalise_metadata({"a": (1, 2), 1: "x"}, 1000)


def test_oversized_metadata_is_refused_naming_it() -> None:
    """Metadata larger than the limit is refused before any event is built."""
    with pytest.raises(InvalidInput) as raised:
        normalise_metadata({"x": "y" * 100}, 50)
    assert "metadata" == raised.value.field


def test_parent_required_is_nothing_without_a_parent() -> None:
    """A create without a parent requires no view row."""
    assert () == parent_required(_checked(parent_id=None))


def test_parent_required_names_the_parent_row_of_this_session() -> None:
    """A parent must be a checkpoint row of the same tenant and session, else parent_id."""
    (required,) = parent_required(_checked(parent_id="p"))
    assert ("checkpoints", {"tenant_id": "t", "session_id": "s", "checkpoint_id": "p"},
            "parent_id") == (required.table, dict(required.where), required.field)


def _checked(*, parent_id: str | None) -> CheckedRecord:
    return CheckedRecord(tenant_id="t", session_id="s", run_id=uuid.uuid4(),
                         checkpoint_id=None, parent_id=parent_id, step=0, metadata={})


def test_plan_delete_releases_one_reference_per_row() -> None:
    """Rows sharing a digest release that many references; the count is every row."""
    plan = plan_delete([b"a" * 32, b"b" * 32, b"a" * 32])
    assert (3, {b"a" * 32: 2, b"b" * 32: 1}) == (plan.count, plan.releases)


def test_plan_delete_of_nothing_releases_nothing() -> None:
    """An empty session plans no release."""
    plan = plan_delete([])
    assert (0, {}) == (plan.count, plan.releases)
