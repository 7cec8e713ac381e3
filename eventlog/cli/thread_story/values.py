"""Payload bytes as an investigator reads them: decoded, rendered short or pretty, diffed.

LangGraph values decode with langgraph-checkpoint's `JsonPlusSerializer` (imported
lazily: without it a value is shown by its size, with the extra to install). Agent
Framework checkpoints are JSON whose non-JSON values are pickles; those are read with
`StubUnpickler`, which rebuilds each object's *shape* (class name and fields) without
importing or running any of the writer's code, so reading a log never executes it.
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import io
import json
import pickle
from collections.abc import Mapping
from typing import Any

SHORT = 120
"""A value whose one-line rendering is longer than this is shown by its size."""
LANGGRAPH_HINT = 'pip install "checkpoint-eventlog[langgraph]" to see LangGraph values'
MAF_ENCODING = "maf-checkpoint+json"
"""The payload label the Agent Framework adapter writes (as ``eventlog.adapters.maf``)."""


class Undecoded:
    """A payload that could not be decoded here: its size and why."""

    def __init__(self, size: int, why: str) -> None:
        self.size = size
        self.why = why

    def __repr__(self) -> str:
        return f"<{self.size:,} B, not decoded: {self.why}>"


def decode(encoding: str, data: bytes) -> Any:
    """The value ``data`` holds, or an `Undecoded` saying why it cannot be shown."""
    if encoding == MAF_ENCODING:
        try:
            return unpickle_values(json.loads(data))
        except ValueError as error:
            return Undecoded(len(data), f"not JSON ({error})")
    if encoding == "null":
        return None
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError:
        return Undecoded(len(data), LANGGRAPH_HINT)
    try:
        return JsonPlusSerializer().loads_typed((encoding, data))
    except Exception as error:  # a foreign serializer's failure is a fact to show, not a crash
        return Undecoded(len(data), f"{encoding}: {type(error).__name__}: {error}")


class Stub:
    """An object rebuilt from a pickle without its class: ``kind`` names the class."""

    kind = "object"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)
        if args:
            self.__dict__["args"] = list(args)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots) of a slotted class
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.__dict__["state"] = state

    def __reduce__(self) -> Any:  # pragma: no cover - never pickled again
        raise TypeError("a stub is not picklable")


class StubUnpickler(pickle.Unpickler):
    """Unpickles with every class replaced by a `Stub` subclass of the same name."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        if (module, name) in (("copyreg", "_reconstructor"), ("copyreg", "__newobj__")):
            return _reconstruct
        return type(name, (Stub,), {"kind": f"{module}.{name}", "__module__": module,
                                    "__qualname__": name})


_SAFE_BUILTINS: dict[str, Any] = {
    "set": set, "frozenset": frozenset, "list": list, "dict": dict, "tuple": tuple,
    "bytearray": bytearray, "complex": complex,
}


def _reconstruct(cls: Any, *args: Any) -> Any:
    return cls() if isinstance(cls, type) and issubclass(cls, Stub) else Stub(cls, *args)


def unpickle_values(document: Any) -> Any:
    """A JSON document with each ``{"__pickled__": …}`` value replaced by its shape."""
    if isinstance(document, list):
        return [unpickle_values(item) for item in document]
    if not isinstance(document, dict):
        return document
    if "__pickled__" in document and "__type__" in document:
        try:
            raw = base64.b64decode(document["__pickled__"])
            return StubUnpickler(io.BytesIO(raw)).load()
        except Exception as error:  # a damaged pickle is shown as such
            return Undecoded(len(str(document["__pickled__"])), f"pickle: {error}")
    return {key: unpickle_values(value) for key, value in document.items()}


def plain(value: Any) -> Any:
    """``value`` as JSON-like data (dicts, lists, strings, numbers) for rendering."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Undecoded):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value):,} bytes>"
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if isinstance(value, Stub):
        fields = {k: plain(v) for k, v in vars(value).items() if v is not None}
        return {"__class__": type(value).__name__, **fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__class__": type(value).__name__,
                **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return {"__class__": type(value).__name__, **plain(dump())}
    return repr(value)


def one_line(value: Any) -> str:
    """A compact one-line rendering."""
    return json.dumps(plain(value), ensure_ascii=False, default=repr, sort_keys=False)


def short(value: Any, size: int | None = None) -> str:
    """The value on one line when it is short, else its kind and size."""
    if isinstance(value, Undecoded):
        return repr(value)
    text = one_line(value)
    if len(text) <= SHORT:
        return text
    kind = type(value).__name__
    return f"<{kind}, {size if size is not None else len(text):,} B>"


def pretty(value: Any) -> str:
    """An indented rendering, for a checkpoint's values."""
    return json.dumps(plain(value), ensure_ascii=False, indent=2, default=repr)


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed from ``before`` to ``after``, one channel at a time: added and removed
    channels, and for a changed one either ``old → new`` or a unified diff of the pretty
    renderings when they are long."""
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            lines.append(f"+ {name} = {short(after[name])}")
        elif name not in after:
            lines.append(f"- {name} (was {short(before[name])})")
        elif plain(before[name]) != plain(after[name]):
            old, new = one_line(before[name]), one_line(after[name])
            if len(old) + len(new) <= 2 * SHORT:
                lines.append(f"~ {name}: {old} → {new}")
                continue
            lines.append(f"~ {name}:")
            lines.extend("    " + line for line in difflib.unified_diff(
                pretty(before[name]).splitlines(), pretty(after[name]).splitlines(),
                lineterm="", n=1) if not line.startswith(("---", "+++")))
    return lines
