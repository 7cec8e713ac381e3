"""Which fields of an event type an encrypted log seals: those its Struct annotates `SEALED`.

An event type declares its free-text fields itself (issue 40 §4), so the log keeps no
table of other packages' event and field names::

    class NoteAdded(Event, tag="app.note_added"):
        note_id: str
        text: Annotated[str, SEALED]
        details: Annotated[dict[str, Any], SEALED] = msgspec.field(default_factory=dict)

A field of a nested Struct, or of each item of a list of Structs, is sealed the same way
(`eventlog.events.interrupts.Interrupt.message`). The registry reads the annotations
once, when the type is registered (`sealed_paths`), as paths into the event's JSON by
encoded name (``*`` for each item of a list): ``("interrupts", "*", "message")``. The
paths, and so the sealed bytes of every log written before types declared them, are
what the log's own table of fields said.

A sealed value is stored as a marker (``"$sealed:…"`` for a string, ``{"$sealed": …}``
for anything else) and an erased one reads ``"$erased"`` or ``{"$erased": true}``, so the
event still decodes as its type: a sealed field must be a ``str``, a ``dict[str, Any]``
or ``Any`` (each optionally ``| None``). Anything else is refused when the type is
registered (`InvalidEvent`).
"""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect as inspect

from eventlog.errors import InvalidEvent

SEALED = msgspec.Meta(extra={"eventlog": "sealed"})
"""The annotation of a field an encrypted log seals: ``Annotated[str, SEALED]``."""

def record_key(*parts: str) -> str:
    """The id of a view record as a sealed value's envelope names it (`Event.sealed_record`)
    and as a view's sealed row binding computes it from the row (`projections.views.
    SealedRow`): its key's parts, as a JSON list (so no two keys read alike)."""
    return msgspec.json.encode(list(parts)).decode()


Path = tuple[str, ...]
"""Where a sealed field is in an event's JSON: keys by encoded name, ``*`` for each item
of a list."""

_LISTS = (inspect.ListType, inspect.VarTupleType, inspect.SetType, inspect.FrozenSetType)


def sealed_paths(event_type: type[msgspec.Struct]) -> tuple[Path, ...]:
    """The paths of ``event_type``'s sealed fields, in declaration order."""
    found: list[Path] = []
    _walk(inspect.type_info(event_type), (), found, event_type.__name__, set())
    return tuple(dict.fromkeys(found))


def _walk(info: Any, path: Path, found: list[Path], owner: str, seen: set[type]) -> None:
    if isinstance(info, inspect.Metadata):
        if _is_sealed(info.extra):
            _check_sealable(info.type, path, owner)
            found.append(path)
        else:
            _walk(info.type, path, found, owner, seen)
    elif isinstance(info, inspect.StructType):
        if info.cls in seen:
            return  # a recursive type: its fields were walked where it first appeared
        for field in info.fields:
            _walk(field.type, (*path, field.encode_name), found, owner, seen | {info.cls})
    elif isinstance(info, _LISTS):
        _walk(info.item_type, (*path, "*"), found, owner, seen)
    elif isinstance(info, inspect.UnionType):
        for member in info.types:
            _walk(member, path, found, owner, seen)
    elif _holds_sealed(info):
        raise InvalidEvent("event type", (
            f"{owner}: a field under {'.'.join(path) or 'the event'} is annotated SEALED "
            f"inside a {type(info).__name__}, which the log cannot walk: annotate the "
            "whole value instead"))


def _holds_sealed(info: Any) -> bool:
    """Whether a SEALED annotation sits anywhere inside ``info`` (a dict's values, a
    fixed-length tuple's items)."""
    if isinstance(info, inspect.Metadata):
        return _is_sealed(info.extra) or _holds_sealed(info.type)
    children: list[Any] = []
    if isinstance(info, inspect.DictType):
        children = [info.key_type, info.value_type]
    elif isinstance(info, inspect.TupleType):
        children = list(info.item_types)
    return any(_holds_sealed(child) for child in children)


def _is_sealed(extra: Any) -> bool:
    return isinstance(extra, dict) and extra.get("eventlog") == "sealed"


def _check_sealable(info: Any, path: Path, owner: str) -> None:
    """A sealed field must decode its marker and its erased form: an unconstrained
    ``str``, ``dict[str, Any]`` or ``Any``, each optionally ``| None``."""
    members = info.types if isinstance(info, inspect.UnionType) else (info,)
    for member in members:
        if isinstance(member, inspect.Metadata):
            member = member.type
        if isinstance(member, inspect.NoneType | inspect.AnyType):
            continue
        if isinstance(member, inspect.StrType) and member == inspect.StrType():
            continue
        if member == inspect.DictType(inspect.StrType(), inspect.AnyType()):
            continue
        raise InvalidEvent("event type", (
            f"{owner}.{'.'.join(path)} is annotated SEALED but is a {_named(member)}: a "
            "sealed field is stored as a marker string or object, so it must be a str, "
            "a dict[str, Any] or Any (optionally | None)"))


def _named(info: Any) -> str:
    return type(info).__name__.removesuffix("Type").lower()
