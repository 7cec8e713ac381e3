"""The SQL text and its values are recorded in one pass: a statement's placeholders are
exactly the values recorded for it, and the envelope is read in one order."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

from eventlog.records import EventEnvelope, RecordedEvent, StoredEvent
from eventlog.storage.base import AppendRequest, PendingEvent
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sql import EVENT_READ_COLUMNS
from eventlog.storage.sqltext import ChangeStatements, Numbered, Positional
from projections.changes import AT_POSITION, Delete, Insert, InsertIfAbsent, Update, Upsert
from projections.checkpoints import CHECKPOINTS
from projections.threads import THREAD_CHECKPOINTS
from tests.conftest import PG_URL

MOMENT = datetime(2030, 1, 1, tzinfo=UTC)
KEY = {"tenant_id": "acme", "thread_id": "t", "namespace": "", "checkpoint_id": "c1"}


def pending(version: int) -> PendingEvent:
    return PendingEvent(event_id=uuid.uuid4(), version=version, recorded_at=MOMENT,
                        type="noted", data=b"{}", prev_hash=b"p" * 32, hash=b"h" * 32)


def numbers(sql: str, prefix: str) -> set[int]:
    return {int(found) for found in re.findall(rf"\{prefix}(\d+)", sql)}


def test_the_read_columns_are_the_envelope_in_its_order() -> None:
    """A row read in `EVENT_READ_COLUMNS` order builds an envelope positionally."""
    fields = [name.replace("stream_version", "version") for name in EVENT_READ_COLUMNS]
    assert fields == list(EventEnvelope.__struct_fields__)


def test_a_recorded_event_keeps_the_stored_envelope() -> None:
    stored = StoredEvent(position=7, event_id=uuid.uuid4(), tenant_id="acme", stream_id="s",
                         version=3, recorded_at=MOMENT, type="noted", data=b"{}",
                         prev_hash=b"p", hash=b"h")
    recorded = RecordedEvent.of(stored, None)  # type: ignore[arg-type]
    for name in EventEnvelope.__struct_fields__:
        assert getattr(recorded, name) == getattr(stored, name)


def test_the_single_append_statement_names_exactly_its_values() -> None:
    """Events, blobs and changes (one finding its event's position) in one statement: every
    recorded value has its placeholder, and an `AT_POSITION` one holds its event's version;
    a second request of the same shape reuses the text with its own values."""
    backend = PostgresBackend(PG_URL, schema="never_opened")
    row = {**KEY, "version": 1, "position": AT_POSITION, "parent_id": None, "run_key": None,
           "step": 0, "state_encoding": "json", "state_digest": b"d" * 32, "channels": "{}",
           "metadata": "{}", "recorded_at": MOMENT}

    def request(first: int) -> AppendRequest:
        return AppendRequest(
            tenant_id="acme", stream_id="s", events=[pending(first), pending(first + 1)],
            changes=[(1, Upsert(THREAD_CHECKPOINTS, row)),
                     (0, InsertIfAbsent(THREAD_CHECKPOINTS, {**row, "checkpoint_id": "c2"}))],
            blob_adds={b"a" * 32: (b"one", 1), b"b" * 32: (b"two", 2)},
        )

    statement = backend.single_statement(request(1))
    assert statement is not None
    sql, values = statement
    assert numbers(sql, "$") == set(range(1, len(values) + 1))
    # (An upsert's placeholders serve both its UPDATE and its INSERT: each counts once.)
    at_position = list(dict.fromkeys(
        int(n) for n in re.findall(r"stream_version = \$(\d+)", sql)))
    assert [values[n - 1] for n in at_position] == [2, 1]
    again = backend.single_statement(request(5))
    assert again is not None
    assert again[0] is sql
    assert [again[1][n - 1] for n in at_position] == [6, 5]


def test_a_change_statement_names_exactly_its_values() -> None:
    """Each kind of view change, its text cached by shape, with values recorded afresh."""
    statements = ChangeStatements({THREAD_CHECKPOINTS: "tc"},
                                  {THREAD_CHECKPOINTS: list(KEY)}, Positional)
    for change in (Update(THREAD_CHECKPOINTS, KEY, {"step": 1, "position": AT_POSITION}),
                   Delete(THREAD_CHECKPOINTS, KEY)):
        for position in (10, 11):
            sql, values = statements(change, position)
            assert numbers(sql, "?") == set(range(1, len(values) + 1))
            assert (position in values) == isinstance(change, Update)


def test_placeholders_are_numbered_past_the_names_made_once() -> None:
    param = Numbered()
    assert param.extend(range(1500))[-2:] == ["$1499", "$1500"]
    assert param("x") == "$1501"


def test_an_insert_is_plain_only_beside_its_event() -> None:
    """A row keyed by its event's version (`Insert`) is a plain INSERT in PostgreSQL's one
    statement, which inserts that event too (its unique version refuses a second run of
    the statement first), and INSERT … ON CONFLICT DO NOTHING anywhere else (a catch-up
    delivery, the sequential path), so a second delivery leaves the row as it is."""
    backend = PostgresBackend(PG_URL, schema="never_opened")
    record = {"tenant_id": "acme", "session_id": "s", "version": 1, "position": AT_POSITION,
              "run_id": uuid.uuid4(), "checkpoint_id": "c1", "parent_id": None, "step": 0,
              "state_digest": b"d" * 32, "state_encoding": "json", "state_size": 2,
              "metadata": "{}", "recorded_at": MOMENT, "subject": None}
    insert = Insert(CHECKPOINTS, record)
    statement = backend.single_statement(AppendRequest(
        tenant_id="acme", stream_id="session:s", events=[pending(1)], changes=[(0, insert)]))
    assert statement is not None
    assert "ON CONFLICT" not in statement[0]
    sql, _ = ChangeStatements({CHECKPOINTS: "c"}, {CHECKPOINTS: ["tenant_id",
                              "session_id", "version"]}, Positional)(insert, 1)
    assert sql.endswith('ON CONFLICT ("tenant_id", "session_id", "version") DO NOTHING')


def test_no_upsert_looks_its_row_up_by_a_planned_query() -> None:
    """Every upsert of PostgreSQL's one statement is an INSERT … ON CONFLICT DO UPDATE: the
    conflict arbiter is the unique index, never planned. No UPDATE goes first, not even
    for the rows appends update in place (a stream's head): its lookup was planned, and
    a generic plan cached while the table was small scanned the whole table at every
    append as it grew (`tests/test_postgres_write_scans.py`)."""
    backend = PostgresBackend(PG_URL, schema="never_opened")
    row = {**KEY, "version": 1, "position": AT_POSITION, "parent_id": None, "run_key": None,
           "step": 0, "state_encoding": "json", "state_digest": b"d" * 32, "channels": "{}",
           "metadata": "{}", "recorded_at": MOMENT}
    head = {"tenant_id": "acme", "stream_id": "thread:t", "version": 1,
            "hash": b"h" * 32, "last_position": AT_POSITION}
    statement = backend.single_statement(AppendRequest(
        tenant_id="acme", stream_id="thread:t", events=[pending(1)],
        changes=[(0, Upsert("stream_heads", head)), (0, Upsert(THREAD_CHECKPOINTS, row))]))
    assert statement is not None
    assert [] == re.findall(r"UPDATE (\S+) SET", statement[0].replace("DO UPDATE SET", ""))
    assert 2 == statement[0].count("ON CONFLICT")
