"""One decoding budget per value read, whatever its shape (issue 42 §4): a list stored
element by element whose manifest names one element N times costs one budget, not N.
The forensic commands (inspect, timeline, report) read thread values through
`GraphReader`; a crafted manifest made ``inspect`` spend ~1.1 s per reference and
``report`` 3.45 GB for N = 2,000 from a 320 KB database."""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog.adapters._safe_decoding import MAX_BYTES
from eventlog.adapters._safe_values import MAX_ITEMS, NotDecoded, Shape, shape_fields
from eventlog.checkpoints.elements import ELEMENTS_ENCODING, Manifest
from eventlog.cli.thread_story.graph import GraphReader
from eventlog.hashing import content_digest

ELEMENT = msgspec.msgpack.encode(list(range(2_000)))
"""One element of 2,000 values (about 5 KB)."""


def shown(value: Any) -> int:
    """How many values a decoded tree holds (containers and atoms alike)."""
    if isinstance(value, dict):
        return 1 + sum(shown(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(shown(item) for item in value)
    if isinstance(value, Shape):
        return 1 + sum(shown(item) for item in shape_fields(value).values())
    return 1


def crafted(references: int) -> tuple[dict[bytes, bytes], str]:
    """The blobs of a list naming one element ``references`` times, and its digest."""
    element = content_digest(ELEMENT)
    manifest = msgspec.msgpack.encode(Manifest([], 0, [("msgpack", element)] * references))
    return {element: ELEMENT, content_digest(manifest): manifest}, content_digest(manifest).hex()


def test_a_list_naming_one_element_many_times_shows_one_budget() -> None:
    """200 references to a 2,000-value element: at most `MAX_ITEMS` values shown, with the
    list itself and the two markers of what is cut (it was 200 times 2,001), the elements
    within the budget shown whole, the rest said to be past it."""
    payloads, digest = crafted(200)
    value, size = GraphReader(payloads).payload(ELEMENTS_ENCODING, digest)
    whole = [item for item in value if isinstance(item, list) and len(item) == 2_000]
    assert (True, True, True) == (
        shown(value) <= MAX_ITEMS + 3, 5 <= len(whole) < 200,
        isinstance(value[-1], NotDecoded))
    assert "past the 20,000 values a payload shows" in repr(value)
    assert size is not None


def test_a_list_naming_one_large_element_many_times_reads_one_payloads_bytes() -> None:
    """400 references to a 100 KB text: what is shown holds at most the 16 MiB a payload
    is decoded up to (it held 40 MB), the rest said to be past it."""
    text = msgspec.msgpack.encode("x" * 100_000)
    element = content_digest(text)
    manifest = msgspec.msgpack.encode(Manifest([], 0, [("msgpack", element)] * 400))
    value, _ = GraphReader({element: text, content_digest(manifest): manifest}).payload(
        ELEMENTS_ENCODING, content_digest(manifest).hex())
    texts = [item for item in value if isinstance(item, str)]
    assert (True, True) == (len(texts) * 100_000 <= MAX_BYTES, 100 < len(texts) < 400)
    assert "bytes a value is decoded up to" in repr(value[-1])


def test_a_short_list_is_shown_whole() -> None:
    """Within the budget nothing changes: every element, in order, decoded."""
    payloads, digest = crafted(3)
    value, _ = GraphReader(payloads).payload(ELEMENTS_ENCODING, digest)
    assert [list(range(2_000))] * 3 == value
