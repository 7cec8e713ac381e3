"""Ids and paths refuse exactly the characters Unicode calls control (Cc) or surrogate (Cs)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.checkpoints.thread_decisions import check_path
from eventlog.errors import InvalidId, InvalidInput
from eventlog.validation import check_id

# Text with surrogates and controls mixed in, which plain st.text() rarely draws.
_TEXT = st.text(
    st.one_of(
        st.characters(codec=None),
        st.characters(min_codepoint=0, max_codepoint=0x9F),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),
    ),
    min_size=1, max_size=40,
)


def _first_refused(value: str) -> str | None:
    return next((c for c in value if unicodedata.category(c) in ("Cc", "Cs")), None)


@pytest.mark.parametrize(("check", "refusal"), [
    (lambda value: check_id("field", value), InvalidId),
    (lambda value: check_path("namespace", value), InvalidInput),
], ids=["check_id", "check_path"])
@given(value=_TEXT)
def test_ids_and_paths_refuse_exactly_control_and_surrogate_characters(
    check: Callable[[str], str], refusal: type[Exception], value: str
) -> None:
    refused = _first_refused(value)
    if refused is None:
        assert value == check(value)
        return
    with pytest.raises(refusal) as raised:
        check(value)
    assert repr(refused) in str(raised.value)
