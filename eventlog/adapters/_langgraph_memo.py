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
change it meanwhile). The memo holds `_MEMO_BYTES` (least recently used dropped first)
and is safe across threads.
"""

from __future__ import annotations

import io
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from eventlog.checkpoints.thread_records import Payload

__all__ = ["MessageMemo"]

_MEMO_BYTES = 32 << 20
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


class _Pickling(threading.local):
    """One pickler a thread (making one costs more than a message's pickle)."""

    def __init__(self) -> None:
        self.sink = io.BytesIO()
        self.pickler = _FieldsPickler(self.sink, protocol=5)
        # No memo: every object written in full (a shared one twice), a quarter faster;
        # a cycle raises ValueError.
        self.pickler.fast = True

    def fields(self, value: Any) -> bytes | None:
        """The pickle of a message's fields (its ``__dict__`` and ``__pydantic_extra__``);
        None when they hold anything but exact builtins."""
        sink = self.sink
        sink.seek(0)
        sink.truncate()
        try:
            self.pickler.dump((value.__dict__, value.__pydantic_extra__))
        except (_NotPlain, pickle.PicklingError, RecursionError, ValueError):
            return None
        return sink.getvalue()


_pickling = _Pickling()


class MessageMemo:
    """Serialized messages by class and fields (see the module docstring)."""

    def __init__(self, budget: int = _MEMO_BYTES) -> None:
        self._budget = budget
        self._classes: frozenset[type] | None = None
        self._held: OrderedDict[bytes, tuple[type, Payload]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

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
