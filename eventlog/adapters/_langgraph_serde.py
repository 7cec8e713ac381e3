"""Which Python types LangGraph's serializer may build when the log's bytes are loaded.

LangGraph's `JsonPlusSerializer` at its defaults rebuilds any msgpack constructor value
``(module, name, arg)`` by importing ``module`` and calling ``name`` (CVE-2026-28277): bytes
that anyone with write access to the store wrote then run in the reader's process. Its
strict mode builds only the types of its safe list (``SAFE_MSGPACK_TYPES``: datetimes,
UUIDs, decimals, LangChain messages, ``Send``, ``Interrupt``, ``Command``, …) and those the
application allows, and returns the stored arguments of any other. Here:

- `strict_serde` is the serializer `AsyncEventlogSaver` uses: `StrictSerializer`,
  LangGraph's serializer in strict mode, which builds what LangGraph's strict allow-list
  builds and nothing else: its safe types, the types of the graph's state (which a graph
  compiled under ``LANGGRAPH_STRICT_MSGPACK=true`` hands over through ``with_allowlist``,
  and which the saver also learns from the values the application writes through it: a
  class this process wrote into a checkpoint is one of its state's), and the
  application's ``allowed_msgpack_modules`` (classes, or ``(module, name)`` pairs;
  ``True`` is LangGraph's permissive mode, for a store only trusted code writes). A
  stored value naming any other type is read back as its fields, as LangGraph's strict
  mode does, and said loudly: an `UnallowedTypeWarning` naming the type and the setting
  that allows it, once per type and saver.
- `CheckedSerde` is what adoption reads another store with and what export reads the log
  with: before LangGraph builds anything it lists what a msgpack value names
  (`constructors`, which imports nothing) and refuses the value (`Refused`) when it names
  a type outside that allow-list or passes a bound, rather than let strict mode silently
  hand back the arguments of a type it would not build (a copy must not change a value).
  A pickle is refused. Serde types it does not know (an encrypting serializer's) go to the
  store's own serializer, which the application configured.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any, Literal

import ormsgpack
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import (
    JsonPlusSerializer,
    _create_msgpack_ext_hook,
    _msgpack_default,
)
from langgraph.checkpoint.serde.jsonplus import _option as _MSGPACK_OPTION

from eventlog.adapters._safe_decoding import constructors

__all__ = ["AllowedTypes", "CheckedSerde", "Refused", "StrictSerializer",
           "UnallowedTypeWarning", "allowed_keys", "strict_serde"]

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
    LangGraph's), else `StrictSerializer` with ``allowed`` (LangGraph's permissive one for
    ``True``)."""
    if serde is None:
        if allowed is True:
            return JsonPlusSerializer(allowed_msgpack_modules=True)
        return StrictSerializer(allowed_keys(allowed))
    if allowed is None:
        return serde
    if isinstance(serde, JsonPlusSerializer) and allowed is not True:
        return serde.with_msgpack_allowlist(allowed_keys(allowed))
    raise TypeError("allowed_msgpack_modules widens LangGraph's JsonPlusSerializer; for "
                    f"a {type(serde).__name__} configure the serializer itself")


class UnallowedTypeWarning(UserWarning):
    """A stored value named a type the saver's allow-list does not hold: it was read back
    as its fields (a dict), not built."""


_SETTING = "allowed_msgpack_modules"


class _AllowList:
    """What the strict ext hook asks ``key in``: the explicit allow-list (the
    application's and the graph's) and the types learned from what was written (a set
    shared by the serializer's copies)."""

    __slots__ = ("explicit", "learned")

    def __init__(self, explicit: frozenset[tuple[str, ...]], learned: set[tuple[str, ...]]):
        self.explicit, self.learned = explicit, learned

    def __contains__(self, key: object) -> bool:
        return key in self.explicit or key in self.learned

    def __bool__(self) -> bool:
        return True


_blocked: ContextVar[list[tuple[str, str]] | None] = ContextVar("eventlog_serde_blocked",
                                                                 default=None)


def _heard(event: SerdeEvent) -> None:
    """LangGraph's strict hook refused a type: noted for the load in progress, if ours."""
    found = _blocked.get()
    if found is not None and event.get("kind") == "msgpack_blocked":
        found.append((str(event.get("module")), str(event.get("name"))))


register_serde_event_listener(_heard)


class StrictSerializer(JsonPlusSerializer):
    """LangGraph's serializer in strict mode, with LangGraph's strict allow-list: its safe
    types, the graph's state types (handed over by ``with_allowlist``, and learned from
    the values the application writes through it), and the application's own
    ``allowed_msgpack_modules``. A value naming any other type comes back as its fields,
    with an `UnallowedTypeWarning` once per type (see the module docstring)."""

    def __init__(self, allowed: Iterable[tuple[str, ...]] = ()) -> None:
        super().__init__(allowed_msgpack_modules=None)
        self._learned: set[tuple[str, ...]] = set()
        self._warned: set[tuple[str, str]] = set()
        self._use(frozenset(allowed))

    def _use(self, explicit: frozenset[tuple[str, ...]]) -> None:
        self._explicit = explicit
        allow = _AllowList(explicit, self._learned)
        self._allowed_msgpack_modules = allow  # type: ignore[assignment]
        self._unpack_ext_hook = _create_msgpack_ext_hook(allow)  # type: ignore[arg-type]

    def with_msgpack_allowlist(
        self, extra_allowlist: Iterable[tuple[str, ...] | type],
    ) -> StrictSerializer:
        """A copy that also builds ``extra_allowlist`` (LangGraph hands a graph's state
        types so); it shares what this one learned and warned about."""
        extra = allowed_keys(extra_allowlist)
        if extra <= self._explicit:
            return self
        clone = copy.copy(self)
        clone._use(self._explicit | extra)
        return clone

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """LangGraph's encoding, byte for byte, noting each class it meets on the way
        (ormsgpack asks LangGraph's ``default`` for every value it cannot write itself)."""
        if obj is None or isinstance(obj, bytes | bytearray):
            return super().dumps_typed(obj)
        return "msgpack", ormsgpack.packb(obj, default=self._noting, option=_MSGPACK_OPTION)

    def _noting(self, value: Any) -> Any:
        """LangGraph's msgpack ``default``, after learning the class of ``value``: a class
        this process writes into a checkpoint is one of its state's, so it is built when
        read back."""
        kind = type(value)
        if (kind.__module__, kind.__name__) not in self._learned:
            self._learned |= _state_types(kind)
        return _msgpack_default(value)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        with self._listening() as blocked:
            value = super().loads_typed(data)
        for key in blocked:
            self._warn(key)
        return value

    @contextmanager
    def _listening(self) -> Iterator[list[tuple[str, str]]]:
        blocked: list[tuple[str, str]] = []
        token = _blocked.set(blocked)
        try:
            yield blocked
        finally:
            _blocked.reset(token)

    def _warn(self, key: tuple[str, str]) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        name = ".".join(key)
        warnings.warn(UnallowedTypeWarning(
            f"a checkpoint value naming {name} was not built: {name} is not on the "
            "LangGraph saver's allow-list, so the data stored for it was read back instead "
            f"(a dict of its fields, for a class). If {name} is a class your graph's state "
            "holds and only your application writes the store, allow it: "
            f"{_SETTING}=[({key[0]!r}, {key[1]!r})] (or the class itself), or set "
            "LANGGRAPH_STRICT_MSGPACK=true so that LangGraph hands the saver the types of "
            "the graph's state when it compiles the graph"), stacklevel=2)


def _state_types(kind: type) -> set[tuple[str, ...]]:
    """``kind`` and the classes its fields are declared to hold, as LangGraph's strict
    mode collects them from a graph's state schema."""
    found: set[tuple[str, ...]] = {(kind.__module__, kind.__name__)}
    try:
        from langgraph._internal._serde import collect_allowlist_from_schemas
    except ImportError:  # pragma: no cover - another LangGraph: the class alone
        return found
    with suppress(Exception):  # a class LangGraph's collector cannot read: the class alone
        found |= collect_allowlist_from_schemas(schemas=[kind])
    return found


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
