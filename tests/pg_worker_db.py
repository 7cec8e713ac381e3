"""A PostgreSQL database of its own for each pytest-xdist worker.

The log's gap-safe reads wait for every transaction of *their database* that began before
(DESIGN.md, "Gap-safe reading"): that is the product working. With two workers on one
database, a test holding a transaction open on purpose (the horizon tests, the consumers'
fences) held back every other worker's reads for that long, and the tests that follow a log
as it is written saw a quiet log where there was none (132 of 200 appends notified where at
most 10 may). So each worker runs its PostgreSQL tests in a database of its own, made empty
at the worker's start (from template0, with the shared database's encoding and locale) and
dropped at its end; one process without workers uses the configured database as before.

A database is named ``<database>_p<controller pid>_<worker>``. A run that was killed
leaves its databases behind: the next run drops those whose controller is gone (only for a
server on this machine, where the pid means something).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
from urllib.parse import urlsplit, urlunsplit

import asyncpg

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
"""This process's pytest-xdist worker id (``gw0``, …), or None outside a worker."""


def _database(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "postgres"


def with_database(url: str, database: str) -> str:
    """``url`` naming ``database`` instead of its own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def _local(url: str) -> bool:
    return (urlsplit(url).hostname or "localhost") in ("localhost", "127.0.0.1", "::1")


async def _drop_orphans(connection: asyncpg.Connection, base: str) -> None:
    """Drop databases of earlier runs whose controller process is gone."""
    pattern = re.compile(rf"^{re.escape(base)}_p(\d+)_gw\d+$")
    for row in await connection.fetch("SELECT datname FROM pg_database"):
        found = pattern.match(row["datname"])
        if found is None:
            continue
        try:
            os.kill(int(found[1]), 0)
        except ProcessLookupError:
            with contextlib.suppress(asyncpg.PostgresError):
                await connection.execute(f'DROP DATABASE IF EXISTS "{row["datname"]}" '
                                         "WITH (FORCE)")
        except PermissionError:
            pass  # alive, another user's


async def _create(url: str, name: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        if _local(url):
            await _drop_orphans(connection, _database(url))
        encoding, collate, ctype = await connection.fetchrow(
            "SELECT pg_encoding_to_char(encoding), datcollate, datctype FROM pg_database "
            "WHERE datname = current_database()")
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await connection.execute(
            f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING '{encoding}' "
            f"LC_COLLATE '{collate}' LC_CTYPE '{ctype}'")
    finally:
        await connection.close()


async def _drop(url: str, name: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


def worker_url(url: str) -> tuple[str, str | None]:
    """The URL this process's PostgreSQL tests use, and why it is the shared one when a
    worker's own database could not be made (None when it could, or no worker runs)."""
    if WORKER is None or os.environ.get("EVENTLOG_TEST_SHARED_DATABASE") == "1":
        return url, None
    name = f"{_database(url)}_p{os.getppid()}_{WORKER}"
    try:
        asyncio.run(_create(url, name))
    except Exception as error:
        return url, f"{type(error).__name__}: {error}"

    _MADE.append((url, name))
    atexit.register(drop_worker_database)
    return with_database(url, name), None


_MADE: list[tuple[str, str]] = []


def drop_worker_database() -> None:
    """Drop the database `worker_url` made for this worker, if it made one."""
    while _MADE:
        url, name = _MADE.pop()
        with contextlib.suppress(Exception):
            asyncio.run(_drop(url, name))
