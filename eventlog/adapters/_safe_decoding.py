"""Framework payloads read without trusting them: nothing is imported, nothing is called.

The bytes a log holds may come from anyone who could write to it (a thread written through
the public API, a hash-valid import, a backup being adopted). LangGraph's serializer at
its defaults rebuilds a msgpack constructor value ``(module, name, arg)`` as
``getattr(import_module(module), name)(arg)``, and a pickle can call any global; so the
forensic commands and adoption read payloads here instead:

- `read_payload` decodes a LangGraph payload (serde types ``msgpack``, ``json``,
  ``pickle``, ``bytes``, ``bytearray``, ``null``) or an Agent Framework checkpoint
  (``maf-checkpoint+json``: JSON whose non-JSON values are pickles, `read_pickle`) into
  plain data: dicts, lists, scalars, the few inert standard values of LangGraph's safe
  list that this module builds itself from checked arguments (dates, times, UUIDs,
  decimals, IP addresses, pure paths), `Shape` for an object (its class's name and its
  fields: the object's data, its class never imported) and `NotDecoded` for a call
  (``<os.system('touch …') not decoded>``).
- Every value is bounded (`bound`): a payload above `MAX_BYTES` is not decoded, msgpack
  extension values nest at most `MAX_EXT_DEPTH` deep, and what is shown of one payload is
  at most `MAX_ITEMS` values and `MAX_DEPTH` levels.
- `constructors` lists every ``(module, name[, method])`` a LangGraph msgpack payload
  names, so adoption can refuse a value naming one outside its allow-list before
  LangGraph's strict serializer builds it.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import ipaddress
import pathlib
import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from eventlog.adapters._safe_pickle import read_pickle
from eventlog.adapters._safe_values import (
    MAX_DEPTH,
    MAX_ITEMS,
    Budget,
    NotDecoded,
    Shape,
    Unreadable,
    bound,
    call,
    preview,
    read_json,
    shape_fields,
    shape_kind,
    shape_name,
)

__all__ = [
    "MAF_ENCODING", "MAX_BYTES", "MAX_DEPTH", "MAX_EXT_DEPTH", "MAX_ITEMS", "Budget",
    "NotDecoded", "Shape", "Unreadable", "bound", "constructors", "read_maf", "read_payload",
    "read_raw", "shape_fields", "shape_kind", "shape_name",
]

MAF_ENCODING = "maf-checkpoint+json"
"""The payload label of an Agent Framework checkpoint (as `eventlog.adapters.maf`)."""
MAX_BYTES = 16 * 1024 * 1024
"""The largest payload decoded (the log's default ``max_payload_bytes``)."""
MAX_EXT_DEPTH = 32
"""The deepest nesting of msgpack extension values decoded (each level is decoded again
from its own bytes)."""


# -- one payload -----------------------------------------------------------------------------

def read_payload(encoding: str, data: bytes, budget: Budget | None = None) -> Any:
    """The bounded value a payload holds (within what is left of ``budget`` when given:
    the parts of one value share one); `Unreadable` when it is too large, malformed or of
    a kind nobody can read without running code (a pickle's persistent ids)."""
    return bound(read_raw(encoding, data), budget=budget)


def read_raw(encoding: str, data: bytes) -> Any:
    """The value a payload holds, not yet bounded (`bound` copies it within a budget):
    what its bytes hold and no more, so one decoding can be shown many times."""
    if len(data) > MAX_BYTES:
        raise Unreadable(f"larger than the {MAX_BYTES:,} bytes a payload is decoded up to")
    if encoding == "null":
        return None
    if encoding == "bytes":
        return bytes(data)
    if encoding == "bytearray":
        return bytearray(data)
    if encoding == MAF_ENCODING:
        return _raw_maf(data)
    if encoding == "msgpack":
        return _Msgpack().read(data)
    if encoding == "json":
        return _json(data)
    if encoding == "pickle":
        return read_pickle(data)
    raise Unreadable(f"no reader for the {encoding!r} serialization")


def constructors(encoding: str, data: bytes) -> tuple[set[tuple[str, ...]], list[str]]:
    """Every ``(module, name)`` (``(module, name, method)`` for a method call) a LangGraph
    msgpack payload names, and what in it is past a bound; nothing is built. Other
    encodings name none here."""
    if encoding != "msgpack":
        return set(), []
    if len(data) > MAX_BYTES:
        return set(), [f"larger than the {MAX_BYTES:,} bytes a payload is decoded up to"]
    reader = _Msgpack()
    try:
        reader.read(data)
    except Unreadable as error:
        return reader.seen, [str(error)]
    return reader.seen, reader.past


def read_maf(data: bytes) -> Any:
    """An Agent Framework checkpoint: its JSON, each pickled value read by `read_pickle`,
    the whole bounded once (one budget for the document)."""
    return bound(_raw_maf(data))


def _raw_maf(data: bytes) -> Any:
    try:
        document = read_json(data)
    except ValueError as error:
        raise Unreadable(f"not JSON ({type(error).__name__}: {error})") from error
    return _unpickle_values(document, MAX_DEPTH)


def _unpickle_values(document: Any, depth: int) -> Any:
    if not isinstance(document, dict | list):
        return document
    if depth <= 0:
        return NotDecoded(f"what is nested deeper than {MAX_DEPTH} levels")
    if isinstance(document, list):
        return [_unpickle_values(item, depth - 1) for item in document]
    if "__pickled__" in document and "__type__" in document:
        pickled = document["__pickled__"]
        try:
            raw = base64.b64decode(str(pickled), validate=True)
            return read_pickle(raw)
        except (Unreadable, binascii.Error, ValueError) as error:
            return NotDecoded(f"a pickle of {len(str(pickled)):,} characters ({error})")
    return {key: _unpickle_values(value, depth - 1) for key, value in document.items()}


# -- LangGraph's msgpack ----------------------------------------------------------------------

# LangGraph's extension codes (langgraph.checkpoint.serde.jsonplus).
_SINGLE_ARG, _POS_ARGS, _KW_ARGS, _METHOD = 0, 1, 2, 3
_PYDANTIC_V1, _PYDANTIC_V2, _NUMPY, _DELTA = 4, 5, 6, 7


class _Msgpack:
    """LangGraph's msgpack with its extension values read as data (`Shape`, `NotDecoded`,
    or one of the inert values `_inert` builds); ``seen`` collects what they name."""

    def __init__(self) -> None:
        self.depth = 0
        self.seen: set[tuple[str, ...]] = set()
        self.past: list[str] = []
        self.decoder = msgspec.msgpack.Decoder(ext_hook=self._ext)

    def read(self, data: bytes | memoryview) -> Any:
        try:
            return self.decoder.decode(data)
        except (msgspec.DecodeError, RecursionError, ValueError, TypeError) as error:
            raise Unreadable(f"msgpack: {type(error).__name__}: {error}") from error

    def _ext(self, code: int, data: memoryview) -> Any:
        if self.depth >= MAX_EXT_DEPTH:
            self.past.append(f"extension values nested deeper than {MAX_EXT_DEPTH}")
            return NotDecoded(f"an extension value nested deeper than {MAX_EXT_DEPTH}")
        self.depth += 1
        try:
            inner = self.decoder.decode(data)
        finally:
            self.depth -= 1
        if code == _DELTA:
            return inner
        if code == _NUMPY:
            return _numpy(inner)
        if not isinstance(inner, list | tuple) or len(inner) < 3 or not (
                isinstance(inner[0], str) and isinstance(inner[1], str)):
            return NotDecoded(f"a msgpack extension value of code {code}")
        module, name, arg = inner[0], inner[1], inner[2]
        method = inner[3] if code in (_METHOD, _PYDANTIC_V2) and len(inner) > 3 else None
        self.seen.add((module, name, str(method)) if code == _METHOD else (module, name))
        return _constructed(code, module, name, arg, method)


def _constructed(code: int, module: str, name: str, arg: Any, method: Any) -> Any:
    kind = f"{module}.{name}"
    if code in (_KW_ARGS, _PYDANTIC_V1, _PYDANTIC_V2) and isinstance(arg, dict) and all(
            isinstance(key, str) for key in arg):
        built = _inert(kind, code, arg)
        return built if built is not None else Shape(kind, arg)
    built = _inert(kind, code, arg, method)
    if built is not None:
        return built
    if code == _POS_ARGS and kind == "langgraph.types.Send" and isinstance(arg, list) and (
            len(arg) in (2, 3)):
        return Shape(kind, dict(zip(("node", "arg", "timeout"), arg, strict=False)))
    if code == _METHOD:
        return call(f"{kind}.{method}", [arg])
    return call(kind, arg if code == _POS_ARGS and isinstance(arg, list) else [arg])


def _numpy(inner: Any) -> NotDecoded:
    if isinstance(inner, list) and len(inner) == 4:
        return NotDecoded(f"a numpy array of {preview(inner[0])}, shape {preview(inner[1])}")
    return NotDecoded("a numpy array")


def _inert(kind: str, code: int, arg: Any, method: Any = None) -> Any:
    """The standard value LangGraph's safe list names, built here from checked arguments
    (no import, no lookup by name); None when ``kind`` is not one or the arguments do not
    fit."""
    build = _INERT.get((kind, code, method))
    if build is None:
        return None
    try:
        return build(arg)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return None


def _strings(arg: Any, limit: int = 10_000) -> list[str]:
    items = arg if isinstance(arg, list) else [arg]
    if not all(isinstance(item, str) and len(item) <= limit for item in items):
        raise TypeError("not strings")
    return items


def _ints(arg: Any) -> list[int]:
    if not isinstance(arg, list) or not all(isinstance(i, int) for i in arg):
        raise TypeError("not integers")
    return arg


def _time(arg: dict[str, Any]) -> dt.time:
    tz = arg.get("tzinfo")
    if tz is not None and not isinstance(tz, dt.tzinfo):
        raise TypeError("not a tzinfo")
    fields = {k: arg[k] for k in ("hour", "minute", "second", "microsecond", "fold") if k in arg}
    if not all(isinstance(v, int) for v in fields.values()):
        raise TypeError("not integers")
    return dt.time(tzinfo=tz, **fields)


def _timezone(arg: Any) -> dt.timezone:
    if not isinstance(arg, list) or not arg or not isinstance(arg[0], dt.timedelta):
        raise TypeError("not a timezone")
    return dt.timezone(arg[0]) if len(arg) == 1 else dt.timezone(arg[0], *_strings(arg[1]))


def _items(arg: Any) -> list[Any]:
    if not isinstance(arg, list | tuple):
        raise TypeError("not a sequence")
    return list(arg)


def _path(arg: Any) -> pathlib.PurePath:
    return pathlib.PurePosixPath(*_strings(arg, 4096))


_INERT: dict[tuple[str, int, Any], Callable[[Any], Any]] = {
    ("datetime.datetime", _METHOD, "fromisoformat"):
        lambda a: dt.datetime.fromisoformat(_strings(a, 64)[0]),
    ("datetime.date", _POS_ARGS, None): lambda a: dt.date(*_ints(a)),
    ("datetime.timedelta", _POS_ARGS, None): lambda a: dt.timedelta(*_ints(a)),
    ("datetime.time", _KW_ARGS, None): _time,
    ("datetime.timezone", _POS_ARGS, None): _timezone,
    ("uuid.UUID", _SINGLE_ARG, None): lambda a: uuid.UUID(hex=_strings(a, 64)[0]),
    ("decimal.Decimal", _SINGLE_ARG, None): lambda a: decimal.Decimal(_strings(a, 1000)[0]),
    ("builtins.set", _SINGLE_ARG, None): _items,
    ("builtins.frozenset", _SINGLE_ARG, None): _items,
    ("collections.deque", _SINGLE_ARG, None): _items,
    ("pathlib.Path", _POS_ARGS, None): _path,
    ("pathlib.PosixPath", _POS_ARGS, None): _path,
    ("pathlib.WindowsPath", _POS_ARGS, None): lambda a: pathlib.PureWindowsPath(*_strings(a)),
    ("pathlib._local.Path", _POS_ARGS, None): _path,
    ("pathlib._local.PosixPath", _POS_ARGS, None): _path,
    ("zoneinfo.ZoneInfo", _SINGLE_ARG, None):
        lambda a: Shape("zoneinfo.ZoneInfo", {"key": _strings(a, 256)[0]}),
    ("re.compile", _POS_ARGS, None):
        lambda a: Shape("re.Pattern", {"pattern": a[0], "flags": a[1]}),
    **{(f"ipaddress.{name}", _SINGLE_ARG, None):
       (lambda cls: lambda a: cls(_strings(a, 64)[0]))(getattr(ipaddress, name))
       for name in ("IPv4Address", "IPv4Interface", "IPv4Network", "IPv6Address",
                    "IPv6Interface", "IPv6Network")},
}


# -- LangGraph's legacy JSON --------------------------------------------------------------------

def _json(data: bytes) -> Any:
    """LangGraph's ``json`` type: LangChain's ``{"lc": …, "type": "constructor", "id": […]}``
    objects are shown as `Shape` of their kwargs, never revived."""
    try:
        return read_json(data, object_hook=_lc_object)
    except ValueError as error:
        raise Unreadable(f"json: {type(error).__name__}: {error}") from error


def _lc_object(value: dict[str, Any]) -> Any:
    ids = value.get("id")
    if value.get("type") in ("constructor", "not_implemented", "secret") and isinstance(
            ids, list) and all(isinstance(part, str) for part in ids) and ids:
        if value["type"] == "secret":
            return NotDecoded(f"the secret {'.'.join(ids)}")
        kwargs = value.get("kwargs")
        fields = dict(kwargs) if isinstance(kwargs, dict) else {}
        if value.get("args"):
            fields["args"] = value["args"]
        return Shape(".".join(ids), fields)
    return value
