"""The chain hash's bytes are a stored format: logs written by any release must verify."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from eventlog.hashing import event_hash


@pytest.mark.parametrize(("fields", "expected"), [
    ({"tenant_id": "acme", "stream_id": "checkpoint-session:s1", "version": 7,
      "event_id": uuid.UUID("0192f0c4-8f3a-7d2e-9b1c-1234567890ab"),
      "type": "checkpoint.created",
      "recorded_at": datetime(2026, 12, 1, 5, 30, 0, 123456, tzinfo=UTC),
      "data": b'{"step":7}', "prev_hash": bytes(range(32))},
     "557088a7b672893695f8975c444362235a6f4639726f959ee347ac08b59634ce"),
    # Non-ASCII tenant, an empty payload, a naive time before the epoch (read as UTC).
    ({"tenant_id": "t\u00e9", "stream_id": "s", "version": 1, "event_id": uuid.UUID(int=0),
      "type": "x", "recorded_at": datetime(1969, 12, 31, 23, 59, 59, 999999),
      "data": b"", "prev_hash": bytes(32)},
     "5718f23c9390a308dd501f084ad3e94927c38f36164c9bf50beb902573530b59"),
])
def test_chain_hash_of_known_envelopes(fields: dict[str, object], expected: str) -> None:
    """Known envelopes hash to the bytes every earlier release computed for them."""
    assert expected == event_hash(**fields).hex()  # type: ignore[arg-type]
