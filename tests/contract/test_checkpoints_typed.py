"""typed() refuses a type msgspec cannot decode into. (The typed layer's contract ships
in `eventlog.testing`.)"""

from __future__ import annotations

import pytest

from eventlog import InvalidInput


def test_a_type_msgspec_cannot_decode_is_refused() -> None:
    """typed() refuses what msgspec cannot decode into (a forward-reference string)."""
    from eventlog.checkpoints import CheckpointStore

    store = CheckpointStore(log=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as raised:
        store.typed("Conversation")  # type: ignore[arg-type]
    assert "state_type" == raised.value.field
