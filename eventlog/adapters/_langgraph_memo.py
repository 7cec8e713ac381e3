"""Serialized messages remembered by what they hold, so that a put serializes what is new.

LangGraph hands a saver a chat thread's whole ``messages`` list on every put, each message
mostly the very object of the step before. Serializing all of them again made a put's
cost grow with the thread (issue 41: 25 % of a put's client CPU at 200 steps, about
20 µs a 1 KB message). A message is mutable (LangGraph's ``add_messages`` sets an ``id``
in place), so neither its identity nor its id says that it is unchanged. What does:

- LangGraph's serializer writes a pydantic model as its class's module and name and its
  ``model_dump()`` (`langgraph.checkpoint.serde.jsonplus._msgpack_default`), and for the
  message classes of `_message_classes` (no computed field, no serializer of their own
  or in a field's type: checked when the set is built) ``model_dump()`` is a function
  of the model's fields, its ``__dict__`` and ``__pydantic_extra__``.
- `_Pickling.fields` pickles those fields with a pickler that refuses every object but the exact
  builtin str, bytes, int, float, bool, None, list, tuple, dict, set, frozenset and
  bytearray, which pickle type for type and value for value (``1``, ``1.0`` and ``True``
  apart, ``0.0`` and ``-0.0`` apart, dicts in order): equal pickles are equal fields,
  and equal fields serialize to equal bytes. The pickle runs in C, several times faster
  than the serialization it saves.

So `MessageMemo.dump_all` keys each message's serialized `Payload` by its class and that
pickle: a message whose fields hold what they held when it was serialized gets the same
bytes back (the very bytes object, which the element planner then recognizes at once); a
message changed in place pickles differently and is serialized again; a message holding
anything else (a model in a field, a str subclass) is always serialized. A message is
remembered only if it pickles the same after it was serialized (another thread could
change it meanwhile).

A put's list goes through `MessageMemo.dump_list`, which does better than one pickle and
one lookup a message: it pickles the fields of the whole list in one C call (`listed`)
and, when those bytes begin with the bytes of the list this channel put last (all of
it: a list that grew), takes that list's payloads whole (`_kept` says why the prefix is
exact); only the messages after it go through `dump_all`. The memo holds `_MEMO_BYTES`
of messages and as much of lists (least recently used dropped first) and is safe across
threads.
"""

from __future__ import annotations

import operator
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple

from eventlog.checkpoints.thread_records import Payload

__all__ = ["MessageMemo"]

_MEMO_BYTES = 16 << 20
"""The pickles and serialized bytes a memo holds."""


class _NotPlain(Exception):
    """A field holds an object that is not an exact builtin."""


class _FieldsPickler(pickle.Pickler):
    """Pickles exact builtins only: CPython's pickler asks ``reducer_override`` about
    every object that is not an exact None, bool, int, float, str, bytes, bytearray,
    list, tuple, dict, set or frozenset, and this one refuses them all."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain(type(obj).__qualname__)


def _message_classes() -> frozenset[type]:
    """LangChain's message classes whose ``model_dump()`` is a function of their fields."""
    from langchain_core import messages

    found = set()
    for name in ("AIMessage", "ChatMessage", "FunctionMessage", "HumanMessage",
                 "SystemMessage", "ToolMessage"):
        kind = getattr(messages, name, None)
        decorators = getattr(kind, "__pydantic_decorators__", None)
        if (kind is not None and decorators is not None
                and not getattr(kind, "__pydantic_computed_fields__", True)
                and not decorators.field_serializers and not decorators.model_serializers
                # nor a serializer in a field's type (Annotated[..., PlainSerializer(f)])
                and "'serialization'" not in repr(getattr(kind, "__pydantic_core_schema__",
                                                          "'serialization'"))):
            found.add(kind)
    return frozenset(found)


class _Sink:
    """Where a pickler writes: without frames (protocol 3, or 5 for a message's fields)
    it writes once a dump, and the bytes it wrote are kept as they are (no copy)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def take(self) -> bytes:
        data = b"".join(self.parts)  # one part: that very object
        self.parts.clear()
        return data


class _Pickling(threading.local):
    """One pickler a thread (making one costs more than a message's pickle)."""

    def __init__(self) -> None:
        self.sink = _Sink()
        self.pickler = _FieldsPickler(self.sink, protocol=5)
        # No memo: every object written in full (a shared one twice), a quarter faster;
        # a cycle raises ValueError. Then an object's pickle never depends on another's.
        self.pickler.fast = True
        # Protocol 3: no frames, so a tuple of messages' fields is ``PROTO 3, MARK``, each
        # one's fields as that one pickles alone, then ``TUPLE, STOP`` (`listed`).
        self.listing = _FieldsPickler(self.sink, protocol=3)
        self.listing.fast = True

    def dump(self, pickler: pickle.Pickler, value: Any) -> bytes | None:
        try:
            pickler.dump(value)
        except (_NotPlain, pickle.PicklingError, RecursionError, ValueError):
            self.sink.take()
            return None
        return self.sink.take()

    def listed(self, values: Sequence[Any]) -> bytes | None:
        """``PROTO 3, MARK``, then each message's fields pickled (`encoded`), then
        ``TUPLE, STOP``: one C call for them all. None as `fields` says."""
        assert len(values) > 3  # fewer pickle as TUPLE1-3, without the MARK
        return self.dump(self.listing, tuple(map(_FIELDS, values)))

    def encoded(self, values: Sequence[Any]) -> bytes | None:
        """The fields of each message as `listed` holds them, one after another."""
        parts = []
        for value in values:
            alone = self.dump(self.listing, (value.__dict__, value.__pydantic_extra__))
            if alone is None:
                return None
            parts.append(alone[2:-1])  # without PROTO 3 and STOP
        return b"".join(parts)

    def fields(self, value: Any) -> bytes | None:
        """The pickle of a message's fields (its ``__dict__`` and ``__pydantic_extra__``);
        None when they hold anything but exact builtins."""
        return self.dump(self.pickler, (value.__dict__, value.__pydantic_extra__))


_FIELDS = operator.attrgetter("__dict__", "__pydantic_extra__")
"""A message's fields as `_Pickling.listed` pickles them: ``(__dict__,
__pydantic_extra__)``, got in C (a generator of those pairs was a third of a late put's
work on a 200-message list)."""

_pickling = _Pickling()


def _kept(last: _Listed | None, kinds: tuple[type, ...], listed: bytes) -> int:
    """How many leading messages are those of ``last`` with the same fields: all of its,
    or none.

    ``listed`` beginning with ``last.listed`` but its ``TUPLE, STOP`` says it: both are
    the same pickler's output for a tuple of ``(dict, dict | None)`` pairs, so after those
    bytes a pickle machine holds, above the mark, ``len(last.kinds)`` finished pairs; in
    ``listed`` the same bytes leave it in the same state, and a pair not yet finished
    would have left its dict there, not a pair. So the first pairs of ``listed`` are
    exactly those, type for type and value for value."""
    if last is None or len(last.kinds) > len(kinds):
        return 0
    if (kinds[:len(last.kinds)] == last.kinds
            and listed.startswith(memoryview(last.listed)[:-2])):
        return len(last.kinds)
    return 0


class _Listed(NamedTuple):
    """A list's last put: its messages' classes, their fields `_Pickling.listed`, and
    their payloads."""

    kinds: tuple[type, ...]
    listed: bytes
    payloads: tuple[Payload, ...]


class MessageMemo:
    """Serialized messages by class and fields (see the module docstring)."""

    def __init__(self, budget: int = _MEMO_BYTES) -> None:
        self._budget = budget
        self._classes: frozenset[type] | None = None
        self._held: OrderedDict[bytes, tuple[type, Payload]] = OrderedDict()
        self._bytes = 0
        self._lists: OrderedDict[Hashable, _Listed] = OrderedDict()
        self._list_bytes = 0
        self._lock = threading.Lock()

    def dump_list(self, key: Hashable, values: Sequence[Any],
                  serialize: Callable[[Any], Payload]) -> tuple[Payload, ...]:
        """`dump_all`, first taking whole the payloads of the messages that begin the list
        ``key`` last put, when the list's fields pickle beginning with theirs."""
        if self._classes is None:
            self._classes = _message_classes()
        kinds = tuple(map(type, values))
        listed = (_pickling.listed(values)
                  if len(values) > 3 and self._classes.issuperset(kinds) else None)
        if listed is None:
            return self.dump_all(values, serialize)
        last = self._lists.get(key)
        start = _kept(last, kinds, listed)
        tail = self.dump_all(values[start:], serialize)
        payloads = last.payloads + tail if last is not None and start else tail
        offset = len(last.listed) - 2 if last is not None and start else 3  # PROTO 3, MARK
        # Kept only when the new messages pickle now as they did before they were
        # serialized (another thread could change one meanwhile).
        tail_fields = _pickling.encoded(values[start:])
        fresh = (tail_fields is not None and len(listed) - 2 - offset == len(tail_fields)
                 and listed.startswith(tail_fields, offset))
        self._list(key, _Listed(kinds, listed, payloads) if fresh else None)
        return payloads

    def _list(self, key: Hashable, listed: _Listed | None) -> None:
        with self._lock:
            old = self._lists.pop(key, None)
            self._list_bytes -= 0 if old is None else len(old.listed)
            if listed is not None:
                self._lists[key] = listed
                self._list_bytes += len(listed.listed)
            while self._list_bytes > self._budget and self._lists:
                self._list_bytes -= len(self._lists.popitem(last=False)[1].listed)

    def dump_all(self, values: Iterable[Any], serialize: Callable[[Any], Payload]
                 ) -> tuple[Payload, ...]:
        """``serialize`` of each of ``values``, or the payload it gave a message with the
        same class and fields (the same bytes object)."""
        if self._classes is None:
            self._classes = _message_classes()
        classes, held, fields_of = self._classes, self._held, _pickling.fields
        result = []
        for value in values:
            fields = fields_of(value) if type(value) in classes else None
            found = None if fields is None else held.get(fields)
            if found is None or found[0] is not type(value):
                result.append(self._miss(value, fields, serialize))
                continue
            try:  # noqa: SIM105  (contextlib.suppress costs a third of a hit)
                held.move_to_end(fields)  # type: ignore[arg-type]  # found: not None
            except KeyError:  # dropped by another thread meanwhile
                pass
            result.append(found[1])
        return tuple(result)

    def _miss(self, value: Any, fields: bytes | None,
              serialize: Callable[[Any], Payload]) -> Payload:
        payload = serialize(value)
        if fields is not None and _pickling.fields(value) == fields:
            self._hold(fields, type(value), payload)  # unchanged while it was serialized
        return payload

    def _hold(self, fields: bytes, kind: type, payload: Payload) -> None:
        with self._lock:
            old = self._held.pop(fields, None)
            if old is not None:
                self._bytes -= len(fields) + len(old[1].data)
            self._held[fields] = (kind, payload)
            self._bytes += len(fields) + len(payload.data)
            while self._bytes > self._budget and self._held:
                pickled, (_, dropped) = self._held.popitem(last=False)
                self._bytes -= len(pickled) + len(dropped.data)
