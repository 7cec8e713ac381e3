"""Which Python types LangGraph's serializer may build when the log's bytes are loaded.

LangGraph's `JsonPlusSerializer` at its defaults rebuilds any msgpack constructor value
``(module, name, arg)`` by importing ``module`` and calling ``name`` (CVE-2026-28277): bytes
that anyone with write access to the store wrote then run in the reader's process. Its
strict mode builds only the types of its safe list (``SAFE_MSGPACK_TYPES``: datetimes,
UUIDs, decimals, LangChain messages, ``Send``, ``Interrupt``, ``Command``, …) and those the
application allows, and returns the stored arguments of any other. Here:

- `strict_serde` is the serializer `AsyncEventlogSaver` uses: LangGraph's, strict, widened
  by the application's ``allowed_msgpack_modules`` (classes, or ``(module, name)`` pairs;
  ``True`` is LangGraph's permissive mode, for a store only trusted code writes).
  LangGraph's own ``with_allowlist`` (what a graph compiled under
  ``LANGGRAPH_STRICT_MSGPACK=true`` calls with its state schema's types) widens it further.
- `CheckedSerde` is what adoption reads another store with and what export reads the log
  with: before LangGraph builds anything it lists what a msgpack value names
  (`constructors`, which imports nothing) and refuses the value (`Refused`) when it names
  a type outside that allow-list or passes a bound, rather than let strict mode silently
  hand back the arguments of a type it would not build (a copy must not change a value).
  A pickle is refused. Serde types it does not know (an encrypting serializer's) go to the
  store's own serializer, which the application configured.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from eventlog.adapters._safe_decoding import constructors

__all__ = ["AllowedTypes", "CheckedSerde", "Refused", "allowed_keys", "strict_serde"]

AllowedTypes = Iterable[tuple[str, ...] | type] | Literal[True] | None
"""What ``allowed_msgpack_modules`` takes: classes or ``(module, name)`` pairs, ``True`` for
LangGraph's permissive mode, None for its safe list alone."""

_PLAIN = frozenset({"msgpack", "json", "null", "bytes", "bytearray", "pickle"})


class Refused(ValueError):
    """A stored value that names a type outside the allow-list (or passes a bound); nothing
    of it was imported or built."""


def allowed_keys(allowed: Iterable[tuple[str, ...] | type] | None) -> frozenset[tuple[str, ...]]:
    """``(module, name)`` pairs for classes and pairs alike."""
    keys: set[tuple[str, ...]] = set()
    for item in allowed or ():
        if isinstance(item, type):
            keys.add((item.__module__, item.__name__))
        else:
            keys.add(tuple(str(part) for part in item))
    return frozenset(keys)


def strict_serde(
    serde: SerializerProtocol | None, allowed: AllowedTypes,
) -> SerializerProtocol:
    """The adapter's serializer: ``serde`` as given (widened by ``allowed`` when it is
    LangGraph's), else LangGraph's in strict mode with ``allowed``."""
    if serde is None:
        return JsonPlusSerializer(allowed_msgpack_modules=(
            True if allowed is True else sorted(allowed_keys(allowed)) or None))
    if allowed is None:
        return serde
    if isinstance(serde, JsonPlusSerializer) and allowed is not True:
        return serde.with_msgpack_allowlist(allowed_keys(allowed))
    raise TypeError("allowed_msgpack_modules widens LangGraph's JsonPlusSerializer; for "
                    f"a {type(serde).__name__} configure the serializer itself")


class CheckedSerde(SerializerProtocol):
    """LangGraph's strict serializer that refuses, rather than rewrites, a value naming a
    type it would not build; see the module docstring."""

    def __init__(self, inner: SerializerProtocol | None = None,
                 allowed: Iterable[tuple[str, ...] | type] | None = None) -> None:
        self.allowed = allowed_keys(allowed)
        self.strict = JsonPlusSerializer(allowed_msgpack_modules=sorted(self.allowed) or None)
        self.inner = inner if inner is not None else self.strict

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind not in _PLAIN:
            return self.inner.loads_typed(data)
        if kind == "pickle":
            raise Refused("it is a pickle, which is never unpickled here (it can run any "
                          "code)")
        named, past = constructors(kind, payload)
        refused = sorted(key for key in named if not self._allows(key))
        if refused or past:
            raise Refused(self._why(refused, past))
        return self.strict.loads_typed(data)

    def _allows(self, key: tuple[str, ...]) -> bool:
        if len(key) == 3:
            return key in SAFE_MSGPACK_METHODS
        return key in SAFE_MSGPACK_TYPES or key in self.allowed

    @staticmethod
    def _why(refused: list[tuple[str, ...]], past: list[str]) -> str:
        if not refused:
            return f"it holds {past[0]} (nothing of it was built)"
        names = ", ".join(".".join(key) for key in refused[:3])
        more = f" and {len(refused) - 3} more" if len(refused) > 3 else ""
        pairs = " ".join(f"--allow-type {key[0]}:{key[1]}" for key in refused[:3]
                         if len(key) == 2)
        one = len(refused) == 1
        widen = (f"; if {'it is a class' if one else 'they are classes'} of yours and the "
                 f"store trusted: {pairs}" if pairs else "")
        return (f"it names {names}{more}, which LangGraph's strict mode does not build "
                f"(nothing of it was imported or run){widen}")
