"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40
)
"""Valid identifiers: non-empty, no control characters."""

actors = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1,
    max_size=255,
).filter(str.strip)
"""Principals an event may name as its actor: 1 to 255 characters, not only whitespace,
no control character or line break."""
