"""The ``iri`` and ``iri-reference`` formats (RFC 3987), checked without a grammar engine.

jsonschema's non-GPL checker for these (``rfc3987_syntax``) builds a Lark grammar when it
is imported: 1.2 s of the first schema check of every process. RFC 3987 §3.1 gives a
cheaper exact test: an IRI is a URI whose non-ASCII characters were allowed where they
stand. Each ``ucschar`` (RFC 3987 §2.2) is allowed exactly where RFC 3986 allows a
percent-encoded octet, except in the scheme, the port and an IP literal, which RFC 3986
refuses percent-encoded too; an ``iprivate`` character is allowed in the query only. So
the checker percent-encodes those characters (``iprivate`` only inside the query) and
asks RFC 3986's own checker (``rfc3986_validator``, the one jsonschema uses for ``uri``)
about the result: any other non-ASCII character is left as it is, and refused.
"""

from __future__ import annotations

import re

from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

_UCSCHAR = re.compile(
    "[\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    "\U00010000-\U0001fffd\U00020000-\U0002fffd\U00030000-\U0003fffd"
    "\U00040000-\U0004fffd\U00050000-\U0005fffd\U00060000-\U0006fffd"
    "\U00070000-\U0007fffd\U00080000-\U0008fffd\U00090000-\U0009fffd"
    "\U000a0000-\U000afffd\U000b0000-\U000bfffd\U000c0000-\U000cfffd"
    "\U000d0000-\U000dfffd\U000e1000-\U000efffd]"
)
_IPRIVATE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


def is_iri(text: str) -> bool:
    """Whether ``text`` is an IRI (RFC 3987 ``IRI``: a scheme, absolute)."""
    return _as_uri(text, "URI")


def is_iri_reference(text: str) -> bool:
    """Whether ``text`` is an IRI reference (RFC 3987 ``IRI-reference``: or relative)."""
    return _as_uri(text, "URI_reference")


def _as_uri(text: str, rule: str) -> bool:
    if text.isascii():
        return validate_rfc3986(text, rule=rule) is not None
    before_fragment, hash_, fragment = text.partition("#")
    path, question, query = before_fragment.partition("?")
    query = _IPRIVATE.sub(_encoded, query)
    mapped = _UCSCHAR.sub(_encoded, f"{path}{question}{query}{hash_}{fragment}")
    return mapped.isascii() and validate_rfc3986(mapped, rule=rule) is not None


def _encoded(match: re.Match[str]) -> str:
    return "".join(f"%{octet:02X}" for octet in match.group().encode("utf-8"))
