"""The SQL schema: the log's tables plus the view tables, for one dialect and schema.

Declared here once; the Alembic scripts in ``migrations/`` create exactly this, and a test
checks that autogenerate finds no difference.
"""

from __future__ import annotations

from functools import cache

import sqlalchemy as sa
from sqlalchemy.types import UserDefinedType

from projections.views import metadata as views_metadata

ID = sa.String(255)


class XID8(UserDefinedType[int]):
    """PostgreSQL's 64-bit transaction id type."""

    cache_ok = True

    def get_col_spec(self, **_: object) -> str:
        return "xid8"


@cache
def build_metadata(dialect: str, schema: str | None) -> sa.MetaData:
    """All tables for ``dialect`` (``sqlite`` or ``postgresql``), in ``schema``."""
    postgres = dialect == "postgresql"
    metadata = sa.MetaData(schema=schema)
    position = (
        sa.Column("position", sa.BigInteger, sa.Identity(always=True), primary_key=True)
        if postgres
        else sa.Column("position", sa.Integer, primary_key=True, autoincrement=True)
    )
    events = sa.Table(
        "events",
        metadata,
        position,
        sa.Column("tenant_id", ID, nullable=False),
        sa.Column("stream_id", ID, nullable=False),
        sa.Column("stream_version", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.Uuid, nullable=False),
        sa.Column("type", ID, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prev_hash", sa.LargeBinary, nullable=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
        # Who appended the event (migration 0010); NULL: not given, as on every older event.
        sa.Column("actor", ID, nullable=True),
        # The writer key's signature of the hash (migration 0019); NULL: unsigned.
        sa.Column("signature", sa.LargeBinary, nullable=True),
        sa.UniqueConstraint(
            "tenant_id", "stream_id", "stream_version", name="events_stream_version_key"
        ),
        sa.UniqueConstraint("tenant_id", "event_id", name="events_event_id_key"),
        # No AUTOINCREMENT on SQLite (migration 0026): its counter table is one more
        # b-tree written at every commit, and guarded only against deleting the last
        # events, which the library never does and whoever can do it can also rewind.
    )
    if postgres:
        events.append_column(
            sa.Column(
                "tx_id", XID8(), nullable=False, server_default=sa.text("pg_current_xact_id()")
            )
        )
        sa.Index("events_log_order", events.c.tx_id, events.c.position)
        sa.Index("events_tenant_log_order", events.c.tenant_id, events.c.tx_id, events.c.position)
    else:
        sa.Index("events_tenant_position", events.c.tenant_id, events.c.position)
    sa.Table(
        "blobs",
        metadata,
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("digest", sa.LargeBinary, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("refs", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    _tree_tables(metadata)
    _key_table(metadata)
    _keyring_table(metadata)
    _consumer_table(metadata)
    for table in views_metadata.sorted_tables:
        if schema is None:
            table.to_metadata(metadata)
        else:
            table.to_metadata(metadata, schema=schema)
    if not postgres:
        for name in SQLITE_WITHOUT_ROWID:
            metadata.tables[name if schema is None else f"{schema}.{name}"].dialect_options[
                "sqlite"]["with_rowid"] = False
    if postgres:
        _compare_text_bytewise(metadata)
        for table in metadata.tables.values():
            options = {**({"fillfactor": HOT_FILLFACTOR[table.name]}
                          if table.name in HOT_FILLFACTOR else {}),
                       **({"toast_tuple_target": OUT_OF_LINE[table.name]}
                          if table.name in OUT_OF_LINE else {})}
            if options:
                table.dialect_options["postgresql"]["with"] = options
    return metadata


KEY_TABLE = "subject_keys"
"""Each (tenant, subject)'s data keys, wrapped (`eventlog.storage.contracts.keys`)."""


def _key_table(metadata: sa.MetaData) -> None:
    sa.Table(
        KEY_TABLE,
        metadata,
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("subject", ID, primary_key=True),
        sa.Column("generation", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("kek_id", ID, nullable=False),
        sa.Column("wrapped", sa.LargeBinary, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
    )


KEYRING_TABLE = "keyrings"
"""The key-encryption keys an encrypted log's data keys are wrapped under, each with a
check value wrapped under it (`eventlog.storage.contracts.keys`, `eventlog.log._mode`): a
row per KEK id, no tenant's (on Citus it stays on the coordinator)."""


def _keyring_table(metadata: sa.MetaData) -> None:
    sa.Table(
        KEYRING_TABLE,
        metadata,
        sa.Column("kek_id", ID, primary_key=True),
        sa.Column("check_value", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


TREE_TABLES = ("tree_states", "tree_nodes", "tree_leaves")
"""The tables of each tenant's transparency tree: derived from the events, like a view,
and written only by the log's integrator (`eventlog.log._tree`)."""


def _tree_tables(metadata: sa.MetaData) -> None:
    sa.Table(
        "tree_states",
        metadata,
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("cursor", ID, nullable=True),
    )
    sa.Table(
        "tree_nodes",
        metadata,
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("level", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
    )
    sa.Table(
        "tree_leaves",
        metadata,
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("event_id", sa.Uuid, primary_key=True),
        sa.Column("leaf_index", sa.BigInteger, nullable=False),
    )


SQLITE_WITHOUT_ROWID = (
    "stream_heads",
    "checkpoints",
    "checkpoint_sessions",
    "checkpoint_runs",
    "thread_checkpoints",
    "thread_writes",
    "thread_channel_values",
)
"""The SQLite tables stored ``WITHOUT ROWID`` (migration 0015): the view tables an append
writes. A rowid table with a declared primary key is two b-trees (the rows by rowid, and
the key's automatic index pointing at them), so each insert wrote a page of both into the
write-ahead log at every commit; a ``WITHOUT ROWID`` table is one b-tree ordered by its
key. Measured with `benchmarks.sqlite_pages`: an adapter ``aput`` from 25.6 pages a commit
to 23.6, a create from 15.9 to 15.4. The events table keeps its rowid (its position is the
rowid, without ``AUTOINCREMENT`` since migration 0026); so do the blobs, whose ~2 KB rows
an index b-tree would spill into overflow pages (measured: more pages, not fewer;
docs/decisions/storage.md)."""


CONSUMER_TABLE = "consumers"
"""Durable consumers' positions and leases (`eventlog.storage.contracts.consumers`): a
row per consumer name, written by acks, claims and resets, never by an append. Not a
tenant's data (a consumer may read the whole log): on Citus it stays on the coordinator."""


def _consumer_table(metadata: sa.MetaData) -> None:
    sa.Table(
        CONSUMER_TABLE,
        metadata,
        sa.Column("name", ID, primary_key=True),
        sa.Column("scope_tenant", ID, nullable=True),
        sa.Column("types", sa.Text, nullable=True),
        sa.Column("cursor", ID, nullable=True),
        sa.Column("token", sa.BigInteger, nullable=False),
        sa.Column("holder", ID, nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        # The writer key's signature of the row (migration 0023; NULL in a log without one).
        sa.Column("signature", sa.LargeBinary, nullable=True),
    )


HOT_FILLFACTOR = {"stream_heads": 70, "checkpoint_sessions": 70}
"""PostgreSQL's ``fillfactor`` of the view tables whose rows appends update in place (a
stream's head on every append, a session's latest on every create): room left on each
page, so an update stays a HOT update (no index entry, no tuple moved to another page).
Measured with 2,000 sessions created round-robin: at the default (100) 3.7 % of the
updates of each table moved their row to another page (a non-HOT update, with a Heap/LOCK
and a primary-key insert each); at 70, none did (migration 0008)."""


OUT_OF_LINE = {"blobs": 128}
"""PostgreSQL's ``toast_tuple_target`` of the tables whose rows carry payloads and are
updated in place: a blob's row is updated at every reference added or dropped (``refs``).
At the default (~2 KB) a payload under ~4 KB (a chat message) stays inline, compressed,
and each update writes a new copy of the whole row, the old one left as dead space that
VACUUM frees for reuse but does not give back. At 128 every payload past ~100 bytes is
moved to the TOAST table, which an update that leaves ``data`` alone does not rewrite:
the update copies a ~100-byte row. Measured on the chat thread of
`benchmarks.bench_elements` at 200 steps (after VACUUM): 4.57 MB → 4.08 MB (migration
0018; docs/decisions/adapters.md, element storage on PostgreSQL)."""


BYTEWISE = "C"
"""PostgreSQL's collation for every text column: byte order, as SQLite and the memory
backend compare. Under a database's default collation (``en_US.UTF-8``, ICU) ``C2``
sorts after ``c2`` and punctuation is skipped, so view queries and keyset pages on text
keys came back in another order than on the other backends."""


def _compare_text_bytewise(metadata: sa.MetaData) -> None:
    for table in metadata.tables.values():
        for column in table.columns:
            kind = column.type
            if isinstance(kind, sa.String) and kind.collation is None:
                collated = kind.copy()
                collated.collation = BYTEWISE
                column.type = collated


def view_table_names() -> tuple[str, ...]:
    """The names of the view tables (everything but the log's own)."""
    return tuple(table.name for table in views_metadata.sorted_tables)
