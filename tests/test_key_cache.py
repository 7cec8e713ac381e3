"""A data key cached by one process is dropped once another process erased its subject,
within the log's ``key_cache_seconds`` (issue 32): two real processes, and the bound."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.crypto import init_keyring
from eventlog.errors import InvalidInput, SubjectErased
from tests.conftest import PG_URL

_CLI = "import sys\nfrom eventlog.cli import main\nsys.exit(main(sys.argv[1:]))\n"
_BOUND = 1.0


async def _create(url: str, keyring: Path, **options: str) -> str:
    async with open_log(url, keyring=keyring, **options) as log:
        created = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s1", run_id=uuid.uuid4(), state={"secret": "x"}))
        return created.checkpoint_id or ""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql",
                                                            marks=pytest.mark.postgres)])
def test_a_process_that_cached_a_key_refuses_within_the_bound_after_another_erased_it(
        tmp_path: Path, backend: str, migrated_pg_schema_or_none: str | None) -> None:
    """Process A reads a checkpoint in a loop (its key cached, ``key_cache_seconds=1``);
    process B (``eventlog erase``) erases the subject; A's reads are refused within the
    bound (plus scheduling slack), and A's write after that is refused too."""
    keyring = init_keyring(tmp_path / "keyring.json")
    if backend == "sqlite":
        url, options, cli = f"sqlite:///{tmp_path / 'log.db'}", {}, []
    else:
        assert migrated_pg_schema_or_none is not None
        url, options = PG_URL, {"schema": migrated_pg_schema_or_none}
        cli = ["--schema", migrated_pg_schema_or_none]
    checkpoint = asyncio.run(_create(url, keyring.path, **options))
    reader = subprocess.Popen(
        [sys.executable, "-m", "tests.procs.key_reader", url,
         migrated_pg_schema_or_none or "-", str(keyring.path), "s1",
         checkpoint, str(_BOUND)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        first = reader.stdout.readline()
        erased = subprocess.run(
            [sys.executable, "-c", _CLI, "erase", "t", "s1", "--url", url, *cli,
             "--keyring", str(keyring.path),  # its writer key signs the erasure record
             "--reason", "asked"], capture_output=True, text=True, timeout=60)
        done = time.monotonic()
        lines = [line.split() for line in reader.stdout]
    finally:
        reader.kill()
        reader.wait()
    assert (0, "") == (erased.returncode, erased.stderr)
    refused = float(next(line[1] for line in lines if line[0] == "erased"))
    print(f"refused {refused - done:.3f} s after the erasure returned")
    assert (0, "read", True, ["write", "refused"]) == (
        erased.returncode, first.split()[0], refused - done < _BOUND + 2.0, lines[-1])


@pytest.fixture
def migrated_pg_schema_or_none(request: pytest.FixtureRequest) -> str | None:
    """A migrated PostgreSQL schema for the postgresql case, None for SQLite."""
    if "postgresql" not in request.node.name:
        return None
    return str(request.getfixturevalue("migrated_pg_schema"))


async def test_within_the_bound_the_cached_key_still_reads_and_after_it_refuses(
        tmp_path: Path) -> None:
    """Two logs over one SQLite file (as two processes): the second erases; the first,
    whose key is cached, reads until its bound passes, then refuses; with the bound at 0
    it refuses at once."""
    keyring = init_keyring(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    checkpoint = await _create(url, keyring.path)
    async with open_log(url, keyring=keyring, key_cache_seconds=0.5) as slow, \
            open_log(url, keyring=keyring, key_cache_seconds=0) as strict, \
            open_log(url, keyring=keyring) as other:
        for log in (slow, strict):
            await log.checkpoints.read("t", "s1", checkpoint)
        await other.erase("t", "s1")
        cached = await slow.checkpoints.read("t", "s1", checkpoint)
        with pytest.raises(SubjectErased):
            await strict.checkpoints.read("t", "s1", checkpoint)
        await asyncio.sleep(0.6)
        with pytest.raises(SubjectErased):
            await slow.checkpoints.read("t", "s1", checkpoint)
    assert {"secret": "x"} == cached


async def test_the_bound_must_be_a_number_of_seconds(tmp_path: Path) -> None:
    """A negative or non-numeric ``key_cache_seconds`` is refused, naming it."""
    for bad in (-1, "5", float("nan")):
        with pytest.raises(InvalidInput, match="key_cache_seconds"):
            async with open_log("memory://", key_cache_seconds=bad):  # type: ignore[arg-type]
                pass
