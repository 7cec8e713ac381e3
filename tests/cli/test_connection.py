"""Reaching the same log again: the demo's hints carry the exact connection, and a
schema that holds no log is named, with advice that fits a reading command."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK, EXIT_OPERATIONAL, EXIT_USAGE, main
from eventlog.testing.helpers import settle
from tests.cli.helpers import Run, Story
from tests.cli.test_errors import one_line_error, run_bare
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres
from tests.events import Noted

on_postgres = pytest.mark.parametrize("target", ["postgresql"], indirect=True)


def hints(out: str) -> list[str]:
    """The commands under the demo's "Look closer:" heading, without their comments."""
    lines = out.split("Look closer:", 1)[1].splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.startswith("  eventlog")]


@on_postgres
def test_demo_hints_on_postgresql_name_the_schema(
    target: BackendTarget, own_run: Run, capsys: pytest.CaptureFixture[str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every hint carries --url and --schema, and pasted as printed it works."""
    monkeypatch.chdir(tmp_path)
    played = own_run("demo")
    assert EXIT_OK == played.status, played.err
    commands = hints(played.out)
    assert 6 == len(commands)
    for command in commands:
        assert f"--url {PG_URL} --schema {target.schema}" in command
        capsys.readouterr()
        assert EXIT_OK == main(shlex.split(command)[1:]), capsys.readouterr().err


def test_demo_hints_on_the_default_file_need_no_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On ./eventlog.db (the default) the hints are bare commands."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVENTLOG_URL", raising=False)
    played = run_bare(capsys, "demo")
    assert EXIT_OK == played.status, played.err
    assert all("--url" not in command for command in hints(played.out))


def test_a_schema_without_a_log_is_named_with_reading_advice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A reading command on an empty schema: exit 3, the schema named, a check of
    --schema suggested, and no library argument (upgrade=True) in the message."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    ran = run_bare(capsys, "log", "--url", PG_URL, "--schema", schema)
    line = one_line_error(ran)
    assert EXIT_OPERATIONAL == ran.status
    assert f"no event log at schema '{schema}' of {PG_URL}" in line
    assert "Is --schema right" in line
    assert f"`eventlog migrate --url {PG_URL} --schema {schema}`" in line
    assert "upgrade=True" not in line


@on_postgres
def test_schema_in_the_url_is_the_schema(
    target: BackendTarget, own_story: Story, capsys: pytest.CaptureFixture[str]
) -> None:
    """``postgresql://…?schema=NAME`` (as the backends page's table shows) reads that schema."""
    url = f"{PG_URL}?schema={target.schema}"
    ran = run_bare(capsys, "timeline", own_story.tenant, own_story.session, "--url", url,
                   "--json")
    assert (EXIT_OK, own_story.session) == (ran.status, ran.json()["session"])


def test_schema_in_the_url_and_another_schema_option_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """?schema=a with --schema b: exit 2 naming both, before connecting."""
    ran = run_bare(capsys, "log", "--url", f"{PG_URL}?schema=a", "--schema", "b")
    line = one_line_error(ran)
    assert EXIT_USAGE == ran.status
    assert "names schema 'a' but schema='b' was also given" in line


async def test_open_log_takes_the_schema_from_the_url() -> None:
    """The library accepts ?schema= too, and keeps it out of the driver's options."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        async with open_log(f"{PG_URL}?schema={schema}") as log:
            await log.append("t", "s", [Noted(text="x", number=1)])
        async with open_log(PG_URL, schema=schema, upgrade=False) as log:
            await settle(log)  # another session on the server may hold the horizon back
            assert 1 == len((await log.read_all(tenant_id="t")).events)
    finally:
        await drop_schema(schema)
