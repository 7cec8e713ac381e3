"""PostgresBackend refuses bad construction with a clear error (not an ``assert``, which
``python -O`` drops), and tells a lost connection from a failed statement by the driver's
exception classes, exactly as it did when it compared their names (issue 24, §5)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy.exc as sa_exc
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import InvalidInput
from eventlog.storage import postgres
from eventlog.storage.postgres import PostgresBackend
from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parent.parent

OLD_NAMES = (
    "ConnectionDoesNotExistError", "ConnectionResetError", "ConnectionFailureError",
    "CannotConnectNowError", "AdminShutdownError", "CrashShutdownError", "BrokenPipeError",
    "InternalClientError",
)
"""The rule as it was: class names compared as strings."""


def old_rule(error: BaseException) -> bool:
    driver = postgres._driver_error(error)
    if type(driver).__name__ == "InterfaceError":
        return "closed" in str(driver)
    return type(driver).__name__ in OLD_NAMES or isinstance(driver, OSError)


def every_subclass(root: type[BaseException]) -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for cls in root.__subclasses__():
        found += [cls, *every_subclass(cls)]
    return found


def driver_errors() -> list[BaseException]:
    """One instance of every asyncpg exception class, of SQLAlchemy's adapted asyncpg
    classes and of every OSError, saying "closed" and not."""
    classes = {*every_subclass(asyncpg.PostgresError), asyncpg.PostgresError,
               asyncpg.InterfaceError, *every_subclass(asyncpg.InterfaceError),
               asyncpg.InternalClientError, *every_subclass(asyncpg.InternalClientError),
               OSError, *every_subclass(OSError),
               *every_subclass(AsyncAdapt_asyncpg_dbapi.Error), ValueError, RuntimeError}
    made: list[BaseException] = []
    for cls in sorted(classes, key=lambda cls: cls.__qualname__):
        for message in ("connection is closed", "no such table"):
            try:
                made.append(cls(message))
            except TypeError:
                continue  # needs other arguments: not one a driver raises bare
    return made


def wrapped(driver: BaseException) -> list[BaseException]:
    """``driver`` as our code meets it: bare, inside SQLAlchemy's DBAPIError, and as the
    cause of SQLAlchemy's adapted error inside a DBAPIError."""
    adapted = AsyncAdapt_asyncpg_dbapi.InterfaceError(str(driver))
    adapted.__cause__ = driver
    return [driver, sa_exc.DBAPIError("SELECT 1", {}, driver),
            sa_exc.InterfaceError("SELECT 1", {}, adapted)]


def test_a_lost_connection_is_told_by_class_as_it_was_by_name() -> None:
    """Over every driver exception class (and SQLAlchemy's wrappings), the classes give
    the very answers the names gave: none lost, none added."""
    cases = [error for driver in driver_errors() for error in wrapped(driver)]
    lost = [error for error in cases if old_rule(error)]
    assert len(lost) > 20  # the rule is exercised both ways
    assert [old_rule(error) for error in cases] == [
        postgres._connection_lost(error) for error in cases]


def test_a_subclass_of_a_lost_class_names_another_failure() -> None:
    """asyncpg's ProtocolError is an InternalClientError that says the server broke the
    protocol, not that the connection is gone: it is not a lost connection."""
    assert (True, False) == (postgres._connection_lost(asyncpg.InternalClientError("x")),
                             postgres._connection_lost(asyncpg.ProtocolError("x")))


async def first_failure(connection: asyncpg.Connection) -> BaseException:
    """What a query on ``connection`` raises once its termination reaches the client."""
    for _ in range(100):
        try:
            await connection.fetchval("SELECT 1")
        except Exception as error:
            return error
        await asyncio.sleep(0.05)
    raise AssertionError("the terminated connection kept answering")


@pytest.mark.postgres
async def test_a_terminated_and_a_closed_connection_are_lost_a_bad_statement_is_not(
) -> None:
    """On the real server: a backend terminated under us, a connection we closed, and a
    statement the server refused."""
    require_postgres()
    killer = await asyncpg.connect(PG_URL)
    victim = await asyncpg.connect(PG_URL)
    try:
        pid = victim.get_server_pid()
        await killer.execute("SELECT pg_terminate_backend($1)", pid)
        terminated = await first_failure(victim)
        with pytest.raises(asyncpg.PostgresError) as refused:
            await killer.fetchval("SELECT * FROM no_such_table_anywhere")
    finally:
        await killer.close()
        victim.terminate()
    closed_connection = await asyncpg.connect(PG_URL)
    await closed_connection.close()
    with pytest.raises(asyncpg.InterfaceError) as closed:
        await closed_connection.fetchval("SELECT 1")
    assert (True, True, False) == tuple(postgres._connection_lost(error) for error in (
        terminated, closed.value, refused.value))


def test_neither_a_url_nor_an_engine_is_refused_naming_url() -> None:
    with pytest.raises(InvalidInput, match=r"^url: give a PostgreSQL URL, or an engine"):
        PostgresBackend()


async def test_both_a_url_and_an_engine_are_refused_naming_engine() -> None:
    engine = create_async_engine(PG_URL.replace("postgresql://", "postgresql+asyncpg://", 1))
    try:
        with pytest.raises(InvalidInput, match=r"^engine: give a URL or an engine, not both"):
            PostgresBackend(PG_URL, engine=engine)
    finally:
        await engine.dispose()


def test_the_refusal_holds_under_python_dash_o() -> None:
    """Assertions are gone under -O; the check is not."""
    script = ("from eventlog.storage.postgres import PostgresBackend\n"
              "try:\n    PostgresBackend()\nexcept ValueError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-O", "-c", script], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.startswith("url: give a PostgreSQL URL")
