"""``distributed=True`` (``?distributed=true``, ``--distributed``) off the Citus cluster:
clear refusals, and nothing changes for a log that does not ask for it. The cluster's own
tests are in tests/citus (``pytest -m citus``)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OPERATIONAL, EXIT_USAGE
from eventlog.errors import InvalidInput, InvalidURL, SchemaError
from tests.cli.test_errors import one_line_error, run_bare
from tests.conftest import PG_URL, drop_schema, require_postgres


async def test_a_server_without_citus_is_refused_by_name() -> None:
    """The shared server has no citus extension: opening says so and creates nothing."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        with pytest.raises(SchemaError, match="needs a Citus coordinator"):
            async with open_log(PG_URL, schema=schema, distributed=True):
                pass
        with pytest.raises(SchemaError, match="needs a Citus coordinator"):
            async with open_log(f"{PG_URL}?distributed=true", schema=schema):
                pass
    finally:
        await drop_schema(schema)


@pytest.mark.parametrize("value", ["yes", 1, None])
async def test_distributed_must_be_a_boolean(value: object) -> None:
    """Anything but True or False is refused by name before connecting."""
    with pytest.raises(InvalidInput, match="distributed: must be True or False"):
        async with open_log(PG_URL, distributed=value):
            pass


async def test_a_url_saying_distributed_must_say_true_or_false() -> None:
    """?distributed= takes true or false; anything else is a bad URL, named."""
    with pytest.raises(InvalidURL, match="distributed='maybe': use true or false"):
        async with open_log(f"{PG_URL}?distributed=maybe"):
            pass


def test_the_command_refuses_distributed_off_postgresql(
    capsys: pytest.CaptureFixture[str], tmp_path: object,
) -> None:
    """--distributed with a SQLite URL: a usage error before anything is opened."""
    ran = run_bare(capsys, "migrate", "--url", f"sqlite:///{tmp_path}/x.db", "--distributed")
    assert EXIT_USAGE == ran.status
    assert "--distributed needs a PostgreSQL log" in one_line_error(ran)


def test_the_command_names_a_server_without_citus(capsys: pytest.CaptureFixture[str]) -> None:
    """eventlog migrate --distributed on a plain PostgreSQL: one line naming what is missing."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        ran = run_bare(capsys, "migrate", "--url", PG_URL, "--schema", schema, "--distributed")
    finally:
        asyncio.run(drop_schema(schema))
    assert EXIT_OPERATIONAL == ran.status
    assert "needs a Citus coordinator" in one_line_error(ran)
