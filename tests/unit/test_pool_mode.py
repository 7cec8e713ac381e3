"""``pool_mode``: how a PostgreSQL log reaches its server (docs/backends.md, "Behind PgBouncer").

``?pool_mode=transaction`` in the URL (or ``pool_mode="transaction"`` to `open_log`) says
a pooler hands out a server connection per transaction: the log's connections then keep no
prepared statement between statements. These check the option itself; tests/test_pgbouncer.py
runs the log through a real PgBouncer.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import InvalidInput, InvalidURL
from eventlog.opening import backend_for

URL = "postgresql://app@db.example/prod"


def connect_options(target: Any, **options: Any) -> tuple[bool, dict[str, Any], str]:
    """Whether the backend pools by transaction, what its connections are opened with,
    and the DSN asyncpg gets."""
    backend: Any = backend_for(target, **options)
    return backend.transaction_pooling, backend._pool.connect_options, backend._dsn


def test_by_default_statements_are_cached_on_each_connection() -> None:
    """Without the option nothing changes: asyncpg's statement cache stays on."""
    assert (False, {}, URL) == connect_options(URL)


@pytest.mark.parametrize(("url", "options"), [
    (f"{URL}?pool_mode=transaction", {}),
    (URL, {"pool_mode": "transaction"}),
    (f"{URL}?pool_mode=transaction", {"pool_mode": "transaction"}),
])
def test_transaction_pooling_turns_the_statement_cache_off(
    url: str, options: dict[str, Any]
) -> None:
    """From the URL or the keyword; the parameter is ours, so the driver never sees it."""
    assert (True, {"statement_cache_size": 0}, URL) == connect_options(url, **options)


def test_the_parameter_leaves_the_others_in_the_url() -> None:
    """``?schema=`` and libpq parameters around it stay where they were."""
    backend: Any = backend_for(
        f"{URL}?application_name=a&pool_mode=transaction&schema=s&sslmode=disable")
    assert (True, "s", f"{URL}?application_name=a&sslmode=disable") == (
        backend.transaction_pooling, backend.schema, backend._dsn)


def test_session_pooling_is_the_default_named() -> None:
    """``session`` (a direct connection, or a pooler in session mode) changes nothing."""
    assert (False, {}, URL) == connect_options(f"{URL}?pool_mode=session")


def test_statement_pooling_is_refused_with_the_reason() -> None:
    """Statement pooling cannot run a transaction, which appends need."""
    with pytest.raises(InvalidInput, match="'statement' pooling cannot run a transaction"):
        backend_for(f"{URL}?pool_mode=statement")


@pytest.mark.parametrize("bad", ["Transaction", "", "on", 1, None])
def test_an_unknown_pool_mode_is_refused_naming_the_choices(bad: Any) -> None:
    """Anything else is an error naming the option and its values."""
    with pytest.raises(InvalidInput, match=r"pool_mode.*session, transaction"):
        backend_for(URL, pool_mode=bad)
    if isinstance(bad, str):
        with pytest.raises(InvalidInput, match=r"pool_mode.*session, transaction"):
            backend_for(f"{URL}?pool_mode={bad}")


def test_the_url_and_the_keyword_must_agree() -> None:
    """Two different answers are refused rather than one silently winning."""
    with pytest.raises(InvalidURL, match="names pool_mode 'transaction' but "
                                         "pool_mode='session' was also given"):
        backend_for(f"{URL}?pool_mode=transaction", pool_mode="session")


async def test_an_applications_engine_is_configured_by_the_application() -> None:
    """The log does not open an engine's connections, so it cannot set their options."""
    engine = create_async_engine("postgresql+asyncpg://app@db.example/prod")
    try:
        with pytest.raises(InvalidInput, match=r"pool_mode.*configure an engine"):
            backend_for(engine, pool_mode="transaction")
    finally:
        await engine.dispose()
