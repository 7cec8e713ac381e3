"""Turning library values into text for people and JSON for scripts.

Nothing here reads the log: every function takes values and returns strings, rich
renderables or plain JSON-ready data, so the commands stay thin and the formats stay in
one place.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from eventlog.cli.console import SafeConsole as SafeConsole
from eventlog.cli.console import plural as plural
from eventlog.cli.console import safe as safe
from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.options import utc_text
from eventlog.cli.sealed import label_of
from eventlog.records import RecordedEvent

_SUMMARY_WIDTH = 90
_VALUE_WIDTH = 40
_HASH_WIDTH = 12
EMPTY = "\N{EN DASH}"  # what an absent value shows as
REDACTED = "(redacted)"
TOKEN_FIELDS = frozenset({"token", "token_digest"})
_FIRST_FIELDS = ("checkpoint_id", "step", "parent_id", "generation", "outcome", "actor",
                 "resolution", "checkpoints")
"""Fields a fitted ``log`` line shows before the others, when they fit."""
_FIELD_ROOM = 30


def safe_data(value: Any) -> Any:
    """JSON-ready ``value`` (as `jsonable` makes it) with `safe` applied to every string
    and key, for a page that shows the strings to people (the incident report)."""
    if isinstance(value, str):
        return safe(value)
    if isinstance(value, dict):
        return {safe(str(key)): safe_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [safe_data(item) for item in value]
    return value


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: times ISO 8601, bytes hex, UUIDs and enums as text;
    a sealed or erased value as its label (`eventlog.cli.sealed`)."""
    if (shown := label_of(value)) is not None:
        return shown
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, msgspec.Struct):
        return jsonable(msgspec.structs.asdict(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(item) for item in value]
    return value


def iso(moment: datetime) -> str:
    """An aware time as every command writes it (`eventlog.cli.options.TIME_FORMAT`)."""
    return utc_text(moment)


def when(moment: datetime | None) -> str:
    """A time for people: `iso`, or the empty mark for none."""
    if moment is None:
        return EMPTY
    return iso(moment)


def short_hash(digest: bytes | None) -> str:
    """The first hex digits of a hash: enough to tell hashes apart on screen."""
    return EMPTY if digest is None else digest.hex()[:_HASH_WIDTH]


def cell(value: Any, width: int = _VALUE_WIDTH) -> str:
    """One value for a table cell: short, on one line."""
    if value is None:
        return EMPTY
    if (shown := label_of(value)) is not None:
        return shown
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return short_hash(bytes(value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    text = value if isinstance(value, str) else msgspec.json.encode(jsonable(value)).decode()
    text = safe(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def redact(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with token material masked: the command never prints a claim's token or
    its digest (as the interrupt store's own ``inspect`` never returns them)."""
    return {
        name: REDACTED if name in TOKEN_FIELDS and value is not None else value
        for name, value in row.items()
    }


def event_fields(event: RecordedEvent) -> dict[str, Any]:
    """The event's own fields, decoded from its stored bytes (without the type tag), with
    token material masked. Bytes that are not JSON at all (a corrupted event) come back as
    ``{"stored_bytes": "<the bytes as text>"}``."""
    try:
        decoded = msgspec.json.decode(event.data)
    except msgspec.DecodeError:
        return {"stored_bytes": event.data.decode("utf-8", "replace")}
    if not isinstance(decoded, dict):
        return {"value": decoded}
    decoded.pop("type", None)
    return redact(jsonable(_times_as_shown(decoded, type(event.event))))


def details_as_shown(event_type: str, details: Mapping[str, Any]) -> dict[str, Any]:
    """An event's fields as a store reported them (its audit trail's ``details``), each
    time written as every command writes times."""
    from eventlog.events import default_registry

    return _times_as_shown(dict(details), default_registry.type_of(event_type))


def _times_as_shown(fields: dict[str, Any], event_type: type | None) -> dict[str, Any]:
    """``fields`` (an event's, as its JSON holds them) with each value its type declares a
    time written as every command writes times (msgspec stores ``…:06Z`` beside
    ``…:06.250Z``); everything else as stored. Unknown types: as stored."""
    if event_type is None:
        return fields
    try:
        info = _type_info(event_type)
    except (TypeError, ValueError):  # pragma: no cover - a registered type always has one
        return fields
    shown: dict[str, Any] = _as_shown(fields, info)
    return shown


@functools.lru_cache(maxsize=512)
def _type_info(event_type: type) -> Any:
    """msgspec's description of an event type, worked out once per type: it evaluates
    every annotation anew each call (4 ms a thread checkpoint event; 1,000 of them were
    three quarters of a 1,000-step thread's page)."""
    import msgspec.inspect  # only when an event is shown

    return msgspec.inspect.type_info(event_type)


def _as_shown(value: Any, info: Any) -> Any:
    import msgspec.inspect as inspect
    if isinstance(info, inspect.DateTimeType) and isinstance(value, str):
        try:
            return iso(datetime.fromisoformat(value))
        except ValueError:
            return value
    if isinstance(info, inspect.UnionType):
        if isinstance(value, str) and not any(isinstance(kind, inspect.StrType)
                                              for kind in info.types):
            times = [kind for kind in info.types if isinstance(kind, inspect.DateTimeType)]
            return _as_shown(value, times[0]) if times else value
        nested = [kind for kind in info.types if not isinstance(kind, inspect.NoneType)]
        return _as_shown(value, nested[0]) if len(nested) == 1 else value
    if isinstance(info, inspect.StructType) and isinstance(value, dict):
        for field in info.fields:
            if field.encode_name in value:
                value[field.encode_name] = _as_shown(value[field.encode_name], field.type)
    elif isinstance(info, inspect.ListType | inspect.VarTupleType | inspect.SetType
                    | inspect.FrozenSetType) and isinstance(value, list):
        return [_as_shown(item, info.item_type) for item in value]
    elif isinstance(info, inspect.DictType) and isinstance(value, dict):
        return {key: _as_shown(item, info.value_type) for key, item in value.items()}
    return value


def summary(
    fields: Mapping[str, Any], skip: Iterable[str] = (), width: int = _SUMMARY_WIDTH
) -> str:
    """``key=value`` pairs on one line (absent values left out), skipping ``skip``, cut
    to ``width`` characters."""
    hidden = set(skip)
    parts = [
        f"{key}={cell(value, 32)}" for key, value in fields.items()
        if key not in hidden and value is not None
    ]
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


def event_json(event: RecordedEvent) -> dict[str, Any]:
    """One event for scripts: its envelope, its decoded fields and its hashes in hex."""
    return {
        "position": event.position,
        "event_id": str(event.event_id),
        "tenant_id": event.tenant_id,
        "stream_id": event.stream_id,
        "version": event.version,
        "recorded_at": iso(event.recorded_at),
        "type": event.type,
        "data": jsonable(event_fields(event)),
        "prev_hash": event.prev_hash.hex(),
        "hash": event.hash.hex(),
        "actor": event.actor,
        **({"undecodable": error} if (error := decode_error(event)) is not None else {}),
    }


def decode_error(event: RecordedEvent) -> str | None:
    """Why the event's stored bytes do not decode as its type (None: they do)."""
    return event.event.error if isinstance(event.event, UndecodableEvent) else None


def event_line(event: RecordedEvent, width: int | None = None, *, full: bool = False) -> Text:
    """One event, like ``git log --oneline``, fitted to ``width`` columns.

    The envelope (position, time, tenant/stream@version, type, and ``by ACTOR`` when the
    event names who appended it) is always whole; when it
    would leave less than `_FIELD_ROOM` columns for the fields, the stream goes on a
    second, indented line. Then the event's
    fields as ``key=value`` pairs, each whole or left out: those that do not fit are
    counted at the end (``+3 (--full)``), so an id is never cut short; the fields that
    say most come first, and one whose value the stream id already shows (its session or
    batch id) is not repeated. With ``full`` (or no ``width``) every field is shown,
    whole.
    """
    head = Text()
    head.append(f"{event.position:>8} ", style="yellow")
    head.append(when(event.recorded_at) + " ", style="dim")
    stream = Text(f"{event.tenant_id}/{event.stream_id}@{event.version}", style="cyan")
    compact = width is not None and not full and (
        cell_len(head.plain) + cell_len(stream.plain) + 1 + cell_len(event.type)
        + _FIELD_ROOM > width)
    line = head.copy()
    if not compact:
        line.append_text(stream)
        line.append(" ")
    line.append(event.type, style="bold")
    if event.actor is not None:
        line.append(f" by {safe(event.actor)}", style="magenta")
    error = decode_error(event)
    if error is not None:
        line.append(f"  does not decode: {error}", style="bold red")
    else:
        fields = event_fields(event)
        if not full:
            fields = {**{k: fields[k] for k in _FIRST_FIELDS if k in fields}, **fields}
        pairs = [f"{key}={value_text(value)}" for key, value in fields.items()
                 if value is not None and (full or width is None or not (
                     isinstance(value, str) and event.stream_id.endswith(f":{value}")))]
        room = None if full or width is None else width - cell_len(line.plain) - 2
        fitted, left_out = fit_pairs(pairs, room)
        if fitted:
            line.append("  " + " ".join(fitted))
        if left_out:
            line.append(f" +{left_out} (--full)", style="dim")
    if compact:
        assert width is not None
        line.append("\n" + " " * max(0, min(9, width - cell_len(stream.plain))))
        line.append_text(stream)
    return line


def value_text(value: Any) -> str:
    """A field's value whole, on one line (times, hashes and JSON as `cell` writes them)."""
    if isinstance(value, str):
        return safe(" ".join(value.split()))
    return cell(value, width=1_000_000)


def fit_pairs(pairs: list[str], room: int | None) -> tuple[list[str], int]:
    """The ``pairs`` that fit whole in ``room`` columns, in order, and how many were left
    out. When some must go, space is kept for a ``+N (--full)`` marker; one that does not
    fit is left out, a shorter one after it may still fit. ``room`` None: all."""
    if room is None or sum(1 + cell_len(pair) for pair in pairs) <= room:
        return pairs, 0
    marker = len(f" +{len(pairs)} (--full)")
    fitted: list[str] = []
    used = 0
    for pair in pairs:
        if used + 1 + cell_len(pair) + marker <= room:
            fitted.append(pair)
            used += 1 + cell_len(pair)
    return fitted, len(pairs) - len(fitted)


def rows_table(title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Table:
    """A table of ``rows`` showing ``columns`` in order."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(cell(row.get(name)) for name in columns))
    return table


def rows_or_records(
    title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], width: int
) -> RenderableType:
    """`rows_table` when it fits ``width`` columns without breaking a header or a value;
    otherwise one block per row (column, value), so nothing is broken mid-word."""
    needed = 4 + sum(
        3 + max([cell_len(name)] + [cell_len(cell(row.get(name))) for row in rows])
        for name in columns)
    if needed <= width or not rows:
        return rows_table(title, rows, columns)
    blocks: list[RenderableType] = [Text(title, style="italic")]
    for number, row in enumerate(rows, start=1):
        blocks.append(pairs_table(f"row {number}", ((name, row.get(name)) for name in columns)))
    return Group(*blocks)


def pairs_table(title: str | None, pairs: Iterable[tuple[str, Any]]) -> Table:
    """A two-column table of labels and values."""
    table = Table(title=title, title_justify="left", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for label, value in pairs:
        table.add_row(label, cell(value, 80))
    return table


def verdict(label: str, ok: bool, problem: str) -> Text:
    """``label: ok`` in green, or ``label: problem`` in red."""
    return Text.assemble(f"{label}: ", ("ok", "green") if ok else (problem, "bold red"))
