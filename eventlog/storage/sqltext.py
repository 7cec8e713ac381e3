"""The SQL text both SQL backends run, written once: applying a view change, answering a
view query, and the event and blob rows of an append.

Each builder takes ``param`` (`Numbered`), which records one value and returns the
numbered placeholder that stands for it (``$n`` on PostgreSQL, ``?n`` on SQLite): a value
and its placeholder are bound when the value is recorded, wherever the text then puts it.
Where the dialects truly differ (a list membership, a JSON containment test) a
`SqlDialect` says how. Backends cache the text by the shape it depends on, so a view query
and a view change are placed in two steps, in one pass over them: ``place_*`` records the
values (every call) and returns what writes the text from their placeholders (called only
when the shape's text is not cached yet). A cached text is always paired with values
recorded afresh, by the same code that numbered the placeholders it holds.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import (
    Callable,
    Collection,
    Generator,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from eventlog.hashing import TOLD_BY_DIGEST
from eventlog.storage.requests import AppendRequest, refusal
from projections.changes import (
    AT_POSITION,
    Change,
    Delete,
    Insert,
    InsertIfAbsent,
    Update,
    Upsert,
    change_shape,
    change_values,
)
from projections.query import In, JsonContains, Lookup, RowRequired, ViewQuery

if TYPE_CHECKING:
    from eventlog.storage.base import AppendRequest, PendingEvent


EVENT_COLUMNS = (
    "tenant_id", "stream_id", "stream_version", "event_id", "type", "data", "recorded_at",
    "prev_hash", "hash", "actor", "signature",
)


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def on_conflict(names: Sequence[str], keys: Sequence[str], *, keep_existing: bool) -> str:
    """The ``ON CONFLICT`` clause of a view upsert: overwrite the non-key columns named,
    or leave an existing row as it is (``keep_existing``, or when only keys are named)."""
    updates = [f"{quote(n)} = EXCLUDED.{quote(n)}" for n in names if n not in keys]
    clause = f" ON CONFLICT ({', '.join(map(quote, keys))}) DO "
    if keep_existing or not updates:
        return clause + "NOTHING"
    return clause + "UPDATE SET " + ", ".join(updates)


# -- an append's rows -------------------------------------------------------------------


def event_row(tenant_id: str, stream_id: str, pending: PendingEvent) -> tuple[Any, ...]:
    """One event row's values, in `EVENT_COLUMNS` order."""
    return (tenant_id, stream_id, pending.version, pending.event_id, pending.type,
            pending.data, pending.recorded_at, pending.prev_hash, pending.hash, pending.actor,
            pending.signature)


def event_insert(table: str, param: Param, values: Sequence[Any]) -> str:
    """Insert one event row (``values`` in `EVENT_COLUMNS` order), returning its position."""
    placeholders = ", ".join(param.extend(values))
    return (f"INSERT INTO {table} ({', '.join(EVENT_COLUMNS)}) VALUES ({placeholders}) "
            "RETURNING position")


def blob_row(tenant_id: str, digest: bytes, payload: bytes, count: int) -> tuple[Any, ...]:
    """The values `blob_add_text` places, in its order."""
    return tenant_id, digest, len(payload), count, payload


def blob_add_text(table: str, slots: Sequence[str], *, counted: bool | None = True) -> str:
    """Store a blob, or add references to the stored one (``slots``: the placeholders of
    a `blob_row`). Not ``counted`` (a payload the digest tells, its count 0:
    `eventlog.hashing.TOLD_BY_DIGEST`): store it if absent, else do nothing (on
    PostgreSQL even an update that changes nothing locks and rewrites the row). ``None``:
    either, by the row's count (an update only where it is not 0)."""
    insert = (f"INSERT INTO {table} AS t (tenant_id, digest, size, refs, data) "
              f"VALUES ({', '.join(slots)}) ON CONFLICT (tenant_id, digest) ")
    if counted is False:
        return insert + "DO NOTHING"
    update = "DO UPDATE SET refs = t.refs + EXCLUDED.refs"
    return insert + update + (" WHERE EXCLUDED.refs <> 0" if counted is None else "")


COUNTED_BLOB = f"length(data) > {TOLD_BY_DIGEST}"
"""The condition a blob row's release and purge are guarded by: a blob the digest tells is
never counted nor deleted, whatever count an older library left in its row. By the bytes'
length (read from the row's header: neither backend loads the bytes for it), not the
``size`` column, which nothing checks the bytes against."""


def blob_release(table: str, param: Param, tenant_id: str, digest: bytes, count: int) -> str:
    """Drop ``count`` references to a blob (then `blob_purge` deletes it at zero)."""
    return (f"UPDATE {table} SET refs = refs - {param(count)} "
            f"WHERE tenant_id = {param(tenant_id)} AND digest = {param(digest)} "
            f"AND {COUNTED_BLOB}")


def blob_purge(table: str, param: Param, tenant_id: str, digest: bytes) -> str:
    """Delete a blob nothing references any more."""
    return (f"DELETE FROM {table} WHERE tenant_id = {param(tenant_id)} "
            f"AND digest = {param(digest)} AND refs <= 0 AND {COUNTED_BLOB}")


# -- view changes ------------------------------------------------------------------------


def place_change(change: Change, param: Param, position: Any) -> list[str]:
    """Record ``change``'s values (`change_values`, in order; `AT_POSITION` stands for
    ``position``); their placeholders, in that order, for `change_text`."""
    return param.extend([position if value is AT_POSITION else value
                         for _, value in change_values(change)])


def change_text(change: Change, table: str, keys: Sequence[str], placed: Sequence[str],
                at_position: Callable[[str], str] | None = None, *,
                event_inserted: bool = False, plain: bool = False) -> str:
    """The statement that applies ``change`` to ``table`` (whose primary key is ``keys``),
    ``placed`` holding the placeholders of its `change_values` in order (`place_change`).

    ``at_position`` turns the placeholder of an `AT_POSITION` value into the text that
    finds the event's position (a subquery), if the value recorded is not the position.
    With ``event_inserted`` (the statement inserts the change's event itself, whose
    unique version refuses a second run of it), an `Insert` is a plain insert; otherwise
    it leaves a row already there as it is, as `InsertIfAbsent` does. ``plain`` writes
    an `InsertIfAbsent` or `Upsert` as a plain insert too: one that fails on a row
    already there, which its caller then writes again without ``plain``
    (`eventlog.storage.postgres.PostgresBackend.append`).
    """
    pairs = [(name, at_position(slot) if at_position is not None and value is AT_POSITION
              else slot)
             for (name, value), slot in zip(change_values(change), placed, strict=True)]
    if isinstance(change, Upsert | Insert | InsertIfAbsent):
        names = [name for name, _ in pairs]
        sql = (f"INSERT INTO {table} ({', '.join(map(quote, names))}) "
               f"VALUES ({', '.join(slot for _, slot in pairs)})")
        if (isinstance(change, Insert) and event_inserted) or plain:
            return sql
        return sql + on_conflict(names, keys, keep_existing=not isinstance(change, Upsert))
    if isinstance(change, Update):
        split = len(change.values)
        sets = ", ".join(f"{quote(n)} = {slot}" for n, slot in pairs[:split])
        where = " AND ".join(f"{quote(n)} = {slot}" for n, slot in pairs[split:])
        return f"UPDATE {table} SET {sets} WHERE {where}"
    assert isinstance(change, Delete)
    where = " AND ".join(f"{quote(n)} = {slot}" for n, slot in pairs)
    return f"DELETE FROM {table} WHERE {where}"


def change_sql(change: Change, table: str, keys: Sequence[str], param: Param,
               position: Any = AT_POSITION) -> str:
    """`change_text` of ``change``, its values recorded through ``param`` (`place_change`)."""
    return change_text(change, table, keys, place_change(change, param, position))


Statement = tuple[str, Sequence[Any], bool]
"""One statement of a sequential append: its text, its values, and whether it returns the
value the append needs next (an event's position)."""


class ChangeStatements:
    """The statement applying a view change and its values, the text cached by the
    change's shape (`change_shape`): what a sequential append runs for each change, and
    what `eventlog.log.SpilledViews` runs on its temporary file."""

    def __init__(self, tables: Mapping[str, str], keys: Mapping[str, Sequence[str]],
                 new_param: Callable[[], Numbered]) -> None:
        self._tables = tables
        self._keys = keys
        self._new_param = new_param
        self._text: dict[Hashable, str] = {}

    def __call__(self, change: Change, position: int) -> tuple[str, list[Any]]:
        """The text and values of ``change``, `AT_POSITION` standing for ``position``."""
        param = self._new_param()
        placed = place_change(change, param, position)
        shape = change_shape(change)
        sql = self._text.get(shape)
        if sql is None:
            sql = self._text[shape] = change_text(
                change, self._tables[change.table], self._keys[change.table], placed)
        return sql, param.values


class SequentialAppend:
    """An append as a sequence of statements inside the caller's transaction: each event
    row (returning its position), each view change, each blob reference change.

    Both SQL backends run it: `statements` is a generator the backend drives with its own
    connection (asyncpg, sqlite3, SQLAlchemy), sending back each event's position. Text is
    cached by shape, so a repeated shape costs only its values.
    """

    def __init__(self, tables: Mapping[str, str], keys: Mapping[str, Sequence[str]],
                 new_param: Callable[[], Numbered]) -> None:
        self._new_param = new_param
        self._tables = tables
        self._text: dict[Hashable, str] = {}
        self._changes = ChangeStatements(tables, keys, new_param)
        names = tables["events"], tables["blobs"]
        self._event_sql = self._cached("event", lambda p: event_insert(
            names[0], p, [None] * len(EVENT_COLUMNS)))
        # One text for counted blobs and those the digest tells (count 0: the update's
        # condition fails, so SQLite writes nothing), so a put's blobs stay one run of
        # one statement. (PostgreSQL's one-statement appends leave those alone unlocked:
        # `blob_add_text`; this path, for releases and large appends, locks them.)
        self._blob_add_sql = self._cached("blob+", lambda p: blob_add_text(
            names[1], p.extend(blob_row("", b"", b"", 0)), counted=None))
        self._blob_release_sql = self._cached("blob-", lambda p: blob_release(
            names[1], p, "", b"", 0))
        self._blob_purge_sql = self._cached("blob0", lambda p: blob_purge(names[1], p, "", b""))

    def statements(self, request: AppendRequest) -> Generator[Statement, Any, list[int]]:
        """The statements of ``request``; send each event's position back (and each
        requirement's answer, first: `InvalidInput` when a row it requires is missing);
        returns the positions.

        Blob rows are touched in digest order, whatever order the request lists them in:
        two appends locking shared blob rows in opposite orders (two session deletes whose
        checkpoints share states) would otherwise deadlock on PostgreSQL. The purges of
        released blobs (those left with no reference) come last, after every row is
        locked, so the releases of a removal follow one another (PostgreSQL sends each
        such run as one pipelined ``executemany``).
        """
        tenant = request.tenant_id
        for required in request.required:
            if not (yield (*self.requirement(required), True)):
                raise refusal(required)
        positions: list[int] = []
        for pending in request.events:
            values = event_row(tenant, request.stream_id, pending)
            positions.append(int((yield self._event_sql, values, True)))
        for index, change in request.changes:
            yield (*self._changes(change, positions[index]), False)
        for digest in sorted(request.blob_adds.keys() | request.blob_releases.keys()):
            if digest in request.blob_adds:
                payload, count = request.blob_adds[digest]
                yield self._blob_add_sql, blob_row(tenant, digest, payload, count), False
            if digest in request.blob_releases:
                count = request.blob_releases[digest]
                yield self._blob_release_sql, [count, tenant, digest], False
        for digest in sorted(request.blob_releases):
            yield self._blob_purge_sql, [tenant, digest], False
        return positions

    def requirement(self, required: RowRequired) -> tuple[str, list[Any]]:
        """The statement telling whether the row ``required`` names exists (one value,
        true or false) and its values, the text cached by the table and columns."""
        param = self._new_param()
        slots = [param(value) for value in required.where.values()]
        shape = ("required", required.table, tuple(required.where))
        sql = self._text.get(shape)
        if sql is None:
            sql = self._text[shape] = (
                f"SELECT EXISTS (SELECT 1 FROM {self._tables[required.table]} WHERE "
                + required_where(required, slots) + ")")
        return sql, param.values

    def _cached(self, name: str, build: Callable[[Param], str]) -> str:
        self._text[name] = build(self._new_param())
        return self._text[name]


def required_where(required: RowRequired, slots: Sequence[str]) -> str:
    """The condition matching the row ``required`` names, its values at ``slots``."""
    return " AND ".join(f"{quote(name)} = {slot}"
                        for name, slot in zip(required.where, slots, strict=True))


# -- view queries ------------------------------------------------------------------------


Condition = Callable[[str], str]
"""A ``where`` condition whose values are recorded: writes its text for a column."""


class SqlDialect(abc.ABC):
    """What a view query's text needs to know of its dialect.

    Each method that places values records them through ``param`` when called and
    returns what writes the text from their placeholders (see the module's docstring).
    """

    @abc.abstractmethod
    def member(self, wanted: In, param: Param) -> Condition:
        """The condition that a column is one of ``wanted.values``."""

    @abc.abstractmethod
    def contains(self, wanted: JsonContains, param: Param) -> Condition:
        """The condition that the JSON object in a column contains ``wanted.value``."""

    @abc.abstractmethod
    def condition_shape(self, value: Any) -> Hashable:
        """What the text of one ``where`` condition depends on, beyond its column."""

    def order_term(self, column: str, *, descending: bool, nullable: bool) -> str:
        """One ORDER BY term, with NULL after every value (before them, descending)."""
        return f"{column} DESC" if descending else column

    lateral: bool = False
    """Whether a lookup seeks inside a ``LATERAL`` subquery (else a ``CROSS JOIN`` that
    the dialect's planner always runs key first)."""

    ranges_ordered_keys: bool = False
    """Whether a ``where`` equality on a column the query also orders by is written as a
    closed range (``c >= $n AND c <= $n``). Equal rows, the same result; what changes is
    the plan. PostgreSQL drops an ORDER BY column fixed by ``=`` from the order it needs,
    so ``thread_id = $2 AND namespace = $3 ORDER BY checkpoint_id DESC LIMIT 1`` is
    ordered as well by any index on ``(tenant_id, checkpoint_id)``: on tables whose
    statistics are missing or stale it walked the tenant's checkpoints newest first and
    filtered them by thread (500 rows removed for one). Kept as a range, the column stays
    in the order, and only the index whose columns are the query's equalities, then its
    ORDER BY, serves the order without a sort; every other index is dominated (fewer
    index conditions and a sort), whatever the statistics say. A store names the key
    columns it seeks in ``order_by`` (``("namespace", "checkpoint_id")``) to choose its
    index (tests/test_read_plans_without_statistics.py)."""

    kept_equal: frozenset[str] = frozenset()
    """Columns whose equality is never written as a range (Citus routes a statement to
    one worker by an equality on the distribution column)."""

    splits_keep_equalities: bool = False
    """Whether the second half of a `ViewQuery.split` read (`_split_source`) writes its
    equalities plainly and names its index (``INDEXED BY``): SQLite's, which with the
    thread as a range seeks no further than the thread, and with plain equalities and no
    hint chose, after ``ANALYZE``, a skip-scan of ``thread_checkpoints_by_run`` and a sort
    (``NOT INDEXED`` on the first half did not stop it either: the first half is written
    as a read of one namespace instead). PostgreSQL keeps its ranges, which keep
    ``thread_checkpoints_by_id`` (led by the id) from serving the order
    (tests/test_read_plans_without_statistics.py)."""

    nests: bool = False
    """Whether a query's `Related` rows are read in its own statement (`related_sql`),
    else by `Lookup` queries after it (`projections.query.read_related`)."""

    def json_text(self, column: str, key: str) -> str:
        """The text value of member ``key`` (a placeholder) of the JSON object (of
        strings) in ``column``; NULL when it has none."""
        return f"({column}::jsonb ->> {key})"

    @abc.abstractmethod
    def key_set(self, lookup: Lookup, param: Param) -> Callable[[], tuple[str, str]]:
        """A `Lookup`'s keys (at least one) as a relation ``k`` of columns ``k0``, ``k1``
        …: what writes the ``WITH`` clause to place before the ``SELECT`` (or ``""``) and
        the ``FROM`` item."""

    @abc.abstractmethod
    def key_set_shape(self, lookup: Lookup) -> Hashable:
        """What the text of `key_set` depends on, beyond the lookup's columns."""


class PostgresDialect(SqlDialect):
    """``= ANY($n)`` over one array; ``@>`` over one JSON text."""

    def member(self, wanted: In, param: Param) -> Condition:
        slot = param(list(wanted.values))
        return lambda column: f"{column} = ANY({slot})"

    def contains(self, wanted: JsonContains, param: Param) -> Condition:
        slot = param(_json(wanted.value))
        return lambda column: f"{column}::jsonb @> {slot}::jsonb"

    def condition_shape(self, value: Any) -> Hashable:
        return type(value).__name__

    lateral = True
    nests = True
    ranges_ordered_keys = True

    def key_set(self, lookup: Lookup, param: Param) -> Callable[[], tuple[str, str]]:
        slots = param.extend([[key[n] for key in lookup.keys]
                              for n in range(len(lookup.columns))])

        def text() -> tuple[str, str]:
            arrays = ", ".join(f"{slot}::{kind}[]" for slot, kind in zip(
                slots, self.key_set_shape(lookup), strict=True))
            names = ", ".join(f"k{n}" for n in range(len(lookup.columns)))
            return "", f"unnest({arrays}) AS k({names})"
        return text

    def key_set_shape(self, lookup: Lookup) -> tuple[str, ...]:
        return tuple(_pg_type(value) for value in lookup.keys[0])


class SqliteDialect(SqlDialect):
    """``IN (?, …)`` with one placeholder per value; JSON1's ``json_each`` per key, the key
    compared literally (scalars compare by JSON type and value, so a boolean is never a
    number; nested objects and arrays compare as their minified JSON text)."""

    def member(self, wanted: In, param: Param) -> Condition:
        slots = param.extend(wanted.values)
        return lambda column: f"{column} IN ({', '.join(slots)})"

    def contains(self, wanted: JsonContains, param: Param) -> Condition:
        if not wanted.value:
            return lambda column: "1 = 1"
        tests = [self._key_equals(key, value, param) for key, value in wanted.value.items()]
        return lambda column: " AND ".join(test(column) for test in tests)

    def json_text(self, column: str, key: str) -> str:
        # Compared as a value: ``->>`` would read a key starting with "$" as a path.
        return f"(SELECT j.value FROM json_each({column}) AS j WHERE j.key = {key})"

    ranges_ordered_keys = True  # without sqlite_stat1 its planner guessed as badly
    splits_keep_equalities = True

    def order_term(self, column: str, *, descending: bool, nullable: bool) -> str:
        # SQLite sorts NULL before every value; PostgreSQL, and so we, after.
        if not nullable:
            return super().order_term(column, descending=descending, nullable=False)
        return f"{column} DESC NULLS FIRST" if descending else f"{column} NULLS LAST"

    def key_set(self, lookup: Lookup, param: Param) -> Callable[[], tuple[str, str]]:
        rows = [param.extend(key) for key in lookup.keys]

        def text() -> tuple[str, str]:
            names = ", ".join(f"k{n}" for n in range(len(lookup.columns)))
            values = ", ".join("(" + ", ".join(row) + ")" for row in rows)
            return f"WITH k({names}) AS (VALUES {values}) ", "k"
        return text

    def key_set_shape(self, lookup: Lookup) -> int:
        return len(lookup.keys)

    def condition_shape(self, value: Any) -> Hashable:
        if isinstance(value, In):
            return ("in", len(value.values))
        if isinstance(value, JsonContains):
            return ("json", tuple(_json_kind(v) for v in value.value.values()))
        return "equal"

    @staticmethod
    def _key_equals(key: str, wanted: Any, param: Param) -> Condition:
        # The key is compared as a value, never spliced into a JSON path: in a path,
        # a key holding `"."` would name a member of a nested object.
        member = f"j.key = {param(key)}"
        kinds = _json_kind(wanted)
        if kinds == "null":
            test = "j.type = 'null'"
        elif kinds in ("true", "false"):
            test = f"j.type = '{kinds}'"
        elif kinds in ("text", "integer"):
            test = f"j.type = '{kinds}' AND j.value = {param(wanted)}"
        elif kinds == "real":
            test = f"j.type IN ('integer', 'real') AND j.value = {param(wanted)}"
        else:
            test = f"j.type IN ('array', 'object') AND j.value = json({param(_json(wanted))})"
        return lambda column: (
            f"EXISTS (SELECT 1 FROM json_each({column}) AS j WHERE {member} AND {test})")


def place_query(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
                param: Param, nullable: Collection[str] = (), *,
                limit_in_text: bool = False) -> Callable[[], str]:
    """Record ``query``'s values through ``param``; what writes the SELECT that answers it
    (``tables`` maps table names to their qualified names; the view is ``v``, and
    ``with_blob`` joins the tenant's blob as ``b``; ``nullable`` names the table's columns
    that may hold NULL; ``limit_in_text``: the limit is written, not sent)."""
    keys = None if query.lookup is None else dialect.key_set(query.lookup, param)
    conditions: list[tuple[str, Condition]] = []
    equalities: list[tuple[str, Condition]] = []  # the same, no equality as a range
    for name, value in query.where.items():
        if isinstance(value, In):
            conditions.append((name, dialect.member(value, param)))
        elif isinstance(value, JsonContains):
            conditions.append((name, dialect.contains(value, param)))
        elif (dialect.ranges_ordered_keys and name in query.order_by
              and name not in dialect.kept_equal):
            slot = param(value)
            conditions.append((name, _pinned(slot)))
            equalities.append((name, _equals(slot)))
            continue
        else:
            conditions.append((name, _equals(param(value))))
        equalities.append(conditions[-1])
    after = (param.extend(query.after)
             if query.after is not None and query.order_by else None)
    limit = (None if query.limit is None
             else str(int(query.limit)) if limit_in_text else param(query.limit))
    return lambda: _query_text(query, tables, dialect, nullable, keys, conditions, after,
                               limit, equalities)


def _equals(slot: str) -> Condition:
    return lambda column: f"{column} = {slot}"


def _pinned(slot: str) -> Condition:
    # Equal, written as a closed range: see `SqlDialect.ranges_ordered_keys`.
    return lambda column: f"{column} >= {slot} AND {column} <= {slot}"


def _query_text(
    query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
    nullable: Collection[str], keys: Callable[[], tuple[str, str]] | None,
    placed: list[tuple[str, Condition]], after: list[str] | None, limit: str | None,
    equalities: list[tuple[str, Condition]],
) -> str:
    """The SELECT of `place_query`, from the placeholders it recorded (``equalities``:
    ``placed`` with no equality written as a range)."""
    def column(name: str) -> str:
        return "v." + quote(name)

    columns = ", ".join(map(column, query.columns)) if query.columns else "v.*"
    prefix = key_set = ""
    if keys is not None:
        prefix, key_set = keys()
    where = [condition(column(name)) for name, condition in placed]
    conditions = list(where)
    order = ", ".join(map(column, query.order_by))
    ordering = ", ".join(
        dialect.order_term(column(n), descending=query.descending, nullable=n in nullable)
        for n in query.order_by)
    if after is not None:
        conditions.append(f"({order}) {'<' if query.descending else '>'} ({', '.join(after)})")
    if query.lookup is not None:
        conditions += [f"{column(name)} = k.k{n}" for n, name in enumerate(query.lookup.columns)]
    sql = f"{prefix}SELECT {columns}"
    source = f"{tables[query.table]} AS v"
    if query.lookup is not None and dialect.lateral:
        # Each key seeks the table by itself: the subquery, never flattened (OFFSET 0),
        # runs once per key with every condition as an index condition.
        source = (f"{key_set} CROSS JOIN LATERAL (SELECT * FROM {source} WHERE "
                  f"{' AND '.join(conditions)} OFFSET 0) AS v")
        conditions = []
    elif query.lookup is not None:
        source = f"{key_set} CROSS JOIN {source}"  # SQLite runs a CROSS JOIN's left side first
    elif query.split is not None and limit is not None and query.order_by:
        source = _split_source(query, dialect, source, where,
                               [c(column(n)) for n, c in equalities], order, ordering,
                               limit, after)
        conditions = []
    if query.with_blob is not None:
        sql += ", b.data AS blob"
        source += (f" LEFT JOIN {tables['blobs']} AS b ON b.tenant_id = v.tenant_id "
                   f"AND b.digest = {column(query.with_blob)}")
    sql += f" FROM {source}"
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    if query.order_by:
        sql += " ORDER BY " + ordering
    if limit is not None:
        sql += f" LIMIT {limit}"
    return sql


def _split_source(query: ViewQuery, dialect: SqlDialect, source: str, conditions: list[str],
                  equalities: list[str], order: str, ordering: str, limit: str,
                  after: list[str] | None) -> str:
    """`ViewQuery.split`: the rows as two ordered, limited halves, merged by the outer
    ORDER BY and LIMIT (at most twice the limit rows to merge).

    The first half (the empty value) is written as a read of one value of the split
    column is: every other equality plain, the split column a closed range, ordered by it
    and the order's last column, its keyset on those two; so each backend seeks the
    primary key to the end of the value's rows and reads them in order (with the thread
    as a range, PostgreSQL started at the end of the thread, among the other values'
    rows, and SQLite sorted the thread's rows). The second half keeps the read's own
    conditions and order (PostgreSQL: the ranges that keep ``thread_checkpoints_by_id``
    out; SQLite: plain equalities, ``INDEXED BY`` its index, `SqlDialect.
    splits_keep_equalities`) and says ``length(column) > 0``, as its partial index does,
    rather than ``column <> ''``: PostgreSQL proves ``<> ''`` from a read of one non-empty
    value (``namespace >= 'child:1' AND namespace <= 'child:1'``) and could then read
    that namespace through the partial index, filtering the others; ``length`` it cannot
    reason about, so only a read that says so takes it. Every order column but the last
    is fixed by an equality, so a keyset on the last column alone is the same keyset."""
    assert query.split is not None
    assert all(name in query.where for name in query.order_by[:-1])
    name, index = query.split
    named, last = "v." + quote(name), "v." + quote(query.order_by[-1])
    before = "<" if query.descending else ">"
    first = [*equalities, f"{named} >= ''", f"{named} <= ''"]
    first_order = ", ".join(dialect.order_term(term, descending=query.descending,
                                               nullable=False) for term in (named, last))
    indexed = dialect.splits_keep_equalities
    second = [*(equalities if indexed else conditions), f"length({named}) > 0"]
    if after is not None:
        first.append(f"({named}, {last}) {before} ('', {after[-1]})")
        # As the read says it (a row comparison PostgreSQL starts its scan at); with the
        # equalities plain, SQLite seeks the last column's range.
        second.append(f"{last} {before} {after[-1]}" if indexed
                      else f"({order}) {before} ({', '.join(after)})")
    halves = [
        f"SELECT * FROM (SELECT v.* FROM {source}{hint} WHERE {' AND '.join(where)} "
        f"ORDER BY {half_order} LIMIT {limit}) AS h{n}"
        for n, (where, half_order, hint) in enumerate((
            (first, first_order, ""),
            (second, ordering, f" INDEXED BY {quote(index)}" if indexed else "")))
    ]
    return f"({' UNION ALL '.join(halves)}) AS v"


def query_sql(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
              param: Param, nullable: Collection[str] = ()) -> str:
    """The SELECT that answers ``query``, its values recorded through ``param`` (what
    `place_query` records and writes, in one call)."""
    return place_query(query, tables, dialect, param, nullable)()


def query_shape(query: ViewQuery, dialect: SqlDialect) -> Hashable:
    """What `query_sql`'s text depends on: backends cache the text by it."""
    return (
        query.table,
        tuple((name, dialect.condition_shape(value)) for name, value in query.where.items()),
        query.order_by, query.descending, query.after is not None, query.limit is not None,
        query.columns, query.with_blob, query.split,
        None if query.lookup is None
        else (query.lookup.columns, dialect.key_set_shape(query.lookup)),
    )


def place_related(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
                  param: Param, nullable: Collection[str] = ()) -> Callable[[], str]:
    """Record the values of ``query`` with its `Related` rows through ``param``; what
    writes the one statement that answers it (PostgreSQL): ``query``'s own rows
    (`place_query`'s SELECT) as ``v``, and for each related table, in a ``LATERAL``
    subquery per row, its rows as one array per column, named ``"<n>.<column>"``
    (`unpack_related` makes them lists of dicts). A related row of ``pairs`` is sought
    by each (key, value) of the row's JSON object, one primary-key seek each (``OFFSET
    0`` keeps the subquery from becoming a join the planner could hash); one of ``on``
    alone by the key's prefix. Every related row is of the row's own tenant. A small
    limit is written into the text (`inline_limit`), not sent."""
    inner = place_query(dataclasses.replace(query, related=(), with_blob=None, columns=None),
                        tables, dialect, param, nullable, limit_in_text=inline_limit(query))
    guessed = param(list(query.blobs)) if query.blobs else None
    return lambda: _related_text(query, tables, dialect, nullable, inner(), guessed)


def related_sql(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
                param: Param, nullable: Collection[str] = ()) -> str:
    """The statement of `place_related`, its values recorded through ``param``, in one call."""
    return place_related(query, tables, dialect, param, nullable)()


def blobs_by_digest(digests: str, blobs: str, tenant: str, alias: str) -> str:
    """PostgreSQL: a FROM clause of ``d.digest`` for each digest of the ``bytea[]``
    parameter ``digests`` and, as ``alias``, the tenant's blob row of that digest (its
    ``data``). One primary-key probe per digest, in a LATERAL subquery the planner cannot
    flatten (``OFFSET 0``): ``digest = ANY(...)`` let it scan the tenant's blobs and filter
    them on tables never analyzed. The digests by subscript, not ``unnest``: PostgreSQL
    sizes ``unnest`` of a parameter at 10 rows in a generic plan and at the array's length
    in a custom one, so a short array made the generic plan look dearer and every call was
    planned again (0.4 ms of planning for 0.15 ms of execution; a read of two blobs 0.16
    ms, 0.08-0.13 by subscript); ``generate_subscripts`` it sizes the same in both."""
    return (f"(SELECT ({digests}::bytea[])[i] AS digest "
            f"FROM generate_subscripts({digests}::bytea[], 1) AS i) AS d "
            f"CROSS JOIN LATERAL (SELECT data FROM {blobs} "
            f"WHERE tenant_id = {tenant} AND digest = d.digest OFFSET 0) AS {alias}")


def _related_text(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
                  nullable: Collection[str], inner: str, guessed: str | None = None) -> str:
    """The statement of `place_related`, around ``inner`` (the query's own SELECT); with
    ``guessed`` (the placeholder of `ViewQuery.blobs`), those blobs of the row's tenant
    too, each sought by the primary key as `get_blobs` seeks them."""
    def column(name: str) -> str:
        return "v." + quote(name)

    sql = "SELECT " + (", ".join(map(column, query.columns)) if query.columns else "v.*")
    source = f"({inner}) AS v"
    if query.with_blob is not None:
        sql += ", b.data AS blob"
        source += (f" LEFT JOIN {tables['blobs']} AS b ON b.tenant_id = v.tenant_id "
                   f"AND b.digest = {column(query.with_blob)}")
    for n, related in enumerate(query.related):
        x = f"x{n}"
        names = [*related.columns, *(["blob"] if related.with_blob is not None else [])]
        aggregates = [f"array_agg({x}.{quote(name)}) AS {quote(f'{n}.{name}')}"
                      for name in related.columns]
        conditions = [f"{x}.tenant_id = v.tenant_id",
                      *(f"{x}.{quote(name)} = {column(name)}" for name in related.on)]
        if related.pairs is not None and related.pairs_from is not None:
            conditions += [f"{x}.{quote(related.pairs[0])} = j.k",
                           f"{x}.{quote(related.pairs[1])} = j.val"]
            rows = (f"jsonb_each_text({column(related.pairs_from)}::jsonb) AS j(k, val) "
                    f"CROSS JOIN LATERAL (SELECT * FROM {tables[related.table]} AS {x} "
                    f"WHERE {' AND '.join(conditions)} OFFSET 0) AS {x}")
            where = ""
        else:
            rows = f"{tables[related.table]} AS {x}"
            where = " WHERE " + " AND ".join(conditions)
        if related.with_blob is not None:
            aggregates.append(f"array_agg(b{n}.data) AS {quote(f'{n}.blob')}")
            rows += (f" LEFT JOIN {tables['blobs']} AS b{n} ON b{n}.tenant_id = {x}.tenant_id "
                     f"AND b{n}.digest = {x}.{quote(related.with_blob)}")
        source += (f" CROSS JOIN LATERAL (SELECT {', '.join(aggregates)} FROM {rows}{where}) "
                   f"AS r{n}")
        sql += ", " + ", ".join(f"r{n}.{quote(f'{n}.{name}')}" for name in names)
    if guessed is not None:
        sql += f", g.digests AS {quote(GUESSED_DIGESTS)}, g.data AS {quote(GUESSED_DATA)}"
        source += (" CROSS JOIN LATERAL (SELECT array_agg(d.digest) AS digests, "
                   "array_agg(f.data) AS data FROM "
                   f"{blobs_by_digest(guessed, tables['blobs'], 'v.tenant_id', 'f')}) AS g")
    sql += f" FROM {source}"
    if query.order_by:
        sql += " ORDER BY " + ", ".join(
            dialect.order_term(column(n), descending=query.descending, nullable=n in nullable)
            for n in query.order_by)
    return sql


GUESSED_DIGESTS = "blobs.digest"
GUESSED_DATA = "blobs.data"
"""The columns a row of `related_sql` carries the guessed blobs in (`ViewQuery.blobs`)."""


INLINE_LIMIT = 100
"""The largest limit `related_sql` writes into its text rather than sends."""


def inline_limit(query: ViewQuery) -> bool:
    """Whether `related_sql` writes ``query``'s limit into its text: PostgreSQL plans a
    statement once for any parameters (a generic plan) only when that plan costs no more
    than planning each call anew, and a ``LIMIT $n`` it cannot size makes the generic
    plan of a read with related rows look dearer than any custom one, so each call was
    planned again (0.5-1 ms of planning for 0.2 ms of execution). Up to `INLINE_LIMIT`
    (one text per limit; `related_shape` tells them apart), and not for a keyset page
    (``after``): the generic plan of ``checkpoint_id < $n … LIMIT 10``, unable to size
    the keyset's range, walked the thread's index across every namespace and filtered
    (the plan test caught it), where planning each call seeks the primary key."""
    return query.limit is not None and query.limit <= INLINE_LIMIT and query.after is None


def related_shape(query: ViewQuery, dialect: SqlDialect) -> Hashable:
    """What `related_sql`'s text depends on: backends cache the text by it."""
    return (query_shape(query, dialect), query.related,
            query.limit if inline_limit(query) else None, bool(query.blobs))


def unpack_related(query: ViewQuery, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` of `related_sql`, each related table's arrays made a list of dicts under
    its `Related` ``name`` (in place)."""
    for n, related in enumerate(query.related):
        names = [*related.columns, *(["blob"] if related.with_blob is not None else [])]
        prefixed = [f"{n}.{name}" for name in names]
        for row in rows:
            arrays = [row.pop(name) for name in prefixed]
            row[related.name] = [] if arrays[0] is None else [
                dict(zip(names, values, strict=True)) for values in zip(*arrays, strict=True)]
    if query.blobs:
        for row in rows:
            digests, data = row.pop(GUESSED_DIGESTS, None), row.pop(GUESSED_DATA, None)
            row["blobs"] = {} if digests is None else {
                bytes(digest): bytes(found) for digest, found in zip(digests, data, strict=True)
                if found is not None}
    return rows


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _pg_type(value: Any) -> str:
    """The PostgreSQL array element type a lookup's key column is sent as."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, bytes):
        return "bytea"
    return "text"


def _json_kind(value: Any) -> str:
    """JSON1's ``json_type`` name for a wanted value (``object``/``array`` for the rest)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    return "object"


class Numbered:
    """A `Param`: records the values of one statement in order and numbers PostgreSQL
    placeholders ``$1``, ``$2`` … for them."""

    prefix = "$"
    _names: ClassVar[list[str]]

    def __init_subclass__(cls) -> None:
        cls._names = [f"{cls.prefix}{n}" for n in range(_NAMED)]

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        """Record ``value``; its placeholder."""
        values = self.values
        values.append(value)
        return self._name(len(values))

    def extend(self, values: Iterable[Any]) -> list[str]:
        """Record each of ``values``; their placeholders, in order."""
        start = len(self.values) + 1
        self.values.extend(values)
        end = len(self.values) + 1
        if end <= _NAMED:
            return self._names[start:end]
        return [self._name(n) for n in range(start, end)]

    def _name(self, number: int) -> str:
        return self._names[number] if number < _NAMED else f"{self.prefix}{number}"


_NAMED = 1024
"""Placeholder names made once per kind (a statement with more numbers the rest)."""
Numbered._names = [f"${n}" for n in range(_NAMED)]


class Positional(Numbered):
    """A `Param` for SQLite: its numbered placeholders ``?1``, ``?2`` …"""

    prefix = "?"


Param = Numbered
"""Records one value and returns the placeholder that stands for it in the text
(``extend`` records many): a `Numbered` or a `Positional`."""


__all__ = [
    "EVENT_COLUMNS", "ChangeStatements", "Condition", "Numbered", "Positional", "PostgresDialect",
    "SequentialAppend", "SqlDialect", "SqliteDialect", "Statement", "blob_add_text",
    "blob_purge", "blob_release", "blob_row", "change_sql", "change_text", "event_insert",
    "event_row", "inline_limit", "on_conflict", "place_change", "place_query", "place_related",
    "query_shape", "query_sql", "quote", "related_shape", "related_sql", "unpack_related",
]
