"""`check_json_value` refuses exactly the values a plain recursive definition calls bad:
a NaN or ±Infinity anywhere, or containers nested `MAX_JSON_DEPTH` deep."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog.errors import InvalidInput
from eventlog.validation import MAX_JSON_DEPTH, check_json_value

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), children, max_size=4),
    ),
    max_leaves=30,
)


def _bad(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if not isinstance(value, dict | list | tuple):
        return False
    if depth >= MAX_JSON_DEPTH:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_bad(child, depth + 1) for child in children)


def _nested(value: Any, levels: int) -> Any:
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


@given(_VALUES, st.sampled_from([0, 1, MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1,
                                 MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1]))
def test_refuses_exactly_the_bad_values(inner: Any, levels: int) -> None:
    value = _nested(inner, levels)
    if _bad(value):
        with pytest.raises(InvalidInput):
            check_json_value("state", value)
    else:
        check_json_value("state", value)


def test_the_refusal_names_the_path_of_the_non_finite_number() -> None:
    with pytest.raises(InvalidInput, match=r"at \$\.a\[1\]"):
        check_json_value("state", {"a": [1.0, float("nan")], "b": 2})
