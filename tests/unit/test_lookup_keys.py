"""A lookup is a set of keys: a key named twice finds its row once, on every backend."""

from projections.query import Lookup


def test_a_repeated_key_is_named_once_in_its_first_place() -> None:
    """Repeats go; the first-seen order stays (the SQL key list follows it)."""
    lookup = Lookup(("checkpoint_id",), (("c2",), ("c1",), ("c2",), ("c1",)))
    assert (("c2",), ("c1",)) == lookup.keys
