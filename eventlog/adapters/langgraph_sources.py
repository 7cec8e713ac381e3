"""LangGraph's own savers over a URL, for ``eventlog adopt langgraph`` and ``eventlog
export langgraph``: ``postgresql://…`` opens ``AsyncPostgresSaver``, ``sqlite:///path`` or a
plain path ``AsyncSqliteSaver`` (``pip install "checkpoint-eventlog[adopt]"`` brings both).

A source is opened read-only (PostgreSQL: every transaction read-only; SQLite: the file
opened with ``mode=ro``) and checked before anything is read: a database without the
saver's tables, or whose schema is another version than the installed saver's, is
refused with `SourceRefused` naming what was found. A target is checked the same way and
then set up by the saver itself (``setup()``: its tables and migrations).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver

from eventlog.errors import SourceRefused

__all__ = ["describe_url", "open_langgraph_saver"]

_SQLITE_COLUMNS = {
    "checkpoints": {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
                    "type", "checkpoint", "metadata"},
    "writes": {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel",
               "type", "value"},
}


def describe_url(url: str) -> str:
    """The URL without its password: what the log records as an adoption's source."""
    if "://" not in url:
        return f"sqlite:///{url}"
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = quote(parts.username or "")
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, f"{user}@{host}{port}", parts.path, parts.query,
                       parts.fragment))


@asynccontextmanager
async def open_langgraph_saver(
    url: str, *, target: bool = False
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """LangGraph's saver for ``url``, checked; read-only unless ``target`` (then set up)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("postgresql", "postgres"):
        async with _postgres(url, target=target) as saver:
            yield saver
    elif scheme == "sqlite" or not scheme:
        async with _sqlite(url, target=target) as saver:
            yield saver
    else:
        raise SourceRefused(describe_url(url), (
            f"{scheme}:// is no LangGraph saver this command opens: give postgresql://… "
            "(PostgresSaver, AsyncPostgresSaver) or sqlite:///path or a path (SqliteSaver)"))


@asynccontextmanager
async def _postgres(url: str, *, target: bool) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection, OperationalError
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import dict_row

    named = describe_url(url)
    params: dict[str, Any] = dict(conninfo_to_dict(url))
    if not target:  # the source is only read: every transaction of this connection is too
        params["options"] = f"{params.get('options', '')} -c default_transaction_read_only=on"
    try:
        connection = await AsyncConnection.connect(
            autocommit=True, prepare_threshold=0, row_factory=dict_row, **params)
    except OperationalError as error:
        raise SourceRefused(named, f"cannot connect: {_first_line(error)}") from error
    async with connection:
        saver = AsyncPostgresSaver(conn=connection)
        known = len(saver.MIGRATIONS) - 1
        cursor = await connection.execute(
            "SELECT to_regclass('checkpoint_migrations') IS NOT NULL AS found")
        row = await cursor.fetchone()
        found = None
        if row is not None and row["found"]:
            cursor = await connection.execute("SELECT max(v) AS v FROM checkpoint_migrations")
            row = await cursor.fetchone()
            found = None if row is None else row["v"]
        if found is None and not target:
            raise SourceRefused(named, (
                "this database has no LangGraph PostgresSaver tables (no "
                "checkpoint_migrations in its search path): is it the saver's database?"))
        if found is not None and found > known:
            raise SourceRefused(named, (
                f"its PostgresSaver schema is at migration {found}, newer than the installed "
                f"langgraph-checkpoint-postgres knows (up to {known}): another major version"))
        if found is not None and found < known and not target:
            raise SourceRefused(named, (
                f"its PostgresSaver schema is at migration {found}, older than the installed "
                f"langgraph-checkpoint-postgres reads ({known}): run that saver's setup() "
                "with this version first"))
        if target:
            await saver.setup()
        yield saver


@asynccontextmanager
async def _sqlite(url: str, *, target: bool) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    named, address = _sqlite_address(url, target=target)
    try:
        connection = await aiosqlite.connect(address, uri=True)
    except Exception as error:
        raise SourceRefused(named, f"cannot open: {error}") from error
    try:
        try:
            tables = await _sqlite_columns(connection)
        except aiosqlite.DatabaseError as error:
            raise SourceRefused(named, f"is not a SQLite database ({error})") from error
        if tables or not target:
            _check_sqlite(named, tables)
        yield AsyncSqliteSaver(connection)
    finally:
        await connection.close()


def _sqlite_address(url: str, *, target: bool) -> tuple[str, str]:
    """The file's name for messages and its ``file:`` URI (read-only for a source); a
    source must exist (opening one never creates it)."""
    path = Path(re.sub(r"^sqlite:///", "", url, flags=re.IGNORECASE))
    named = describe_url(str(path))
    if not target and not path.is_file():
        raise SourceRefused(named, "no such file")
    if target and path.exists() and not path.is_file():
        raise SourceRefused(named, "is not a file")
    return named, path.resolve().as_uri() + ("" if target else "?mode=ro")


async def _sqlite_columns(connection: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for table in _SQLITE_COLUMNS:
        cursor = await connection.execute(f"PRAGMA table_info({table})")
        columns = {row[1] for row in await cursor.fetchall()}
        if columns:
            found[table] = columns
    return found


def _check_sqlite(named: str, tables: dict[str, set[str]]) -> None:
    missing = [table for table in _SQLITE_COLUMNS if table not in tables]
    if missing:
        raise SourceRefused(named, (
            f"this database has no LangGraph SqliteSaver {' and '.join(missing)} table: "
            "is it the saver's database?"))
    for table, wanted in _SQLITE_COLUMNS.items():
        if lacking := sorted(wanted - tables[table]):
            raise SourceRefused(named, (
                f"its {table} table lacks {', '.join(lacking)}: another version of the "
                "SqliteSaver schema than the installed langgraph-checkpoint-sqlite's"))


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
