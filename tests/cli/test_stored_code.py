"""Reading, reporting, exporting and adopting never run what a log (or a source) stores.

Each command runs in a child process under an address-space limit and a timeout, on a log
holding the payloads of issue 30: a LangGraph channel value and pending write that
LangGraph's permissive serializer would turn into ``os.system("touch MARKER")``, an Agent
Framework pickle of 46 bytes that calls ``bytearray(2**30)``, and one of ~250 bytes that
holds 2**20 references to one string. The marker file must not appear, the child must end
within its time and memory, and the output must show each value as not decoded.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import sqlite3
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from eventlog import open_log
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres

TENANT = "acme"
LIMIT = 1024**3
"""The child's address space (an idle ``eventlog inspect`` peaks near 340 MB)."""
MAX_RSS_KB = 400 * 1024
"""The most resident memory a child may reach (an idle one stays near 130 MB)."""
TIMEOUT = 120
pytestmark = pytest.mark.growth  # child processes under an address-space limit: the growth campaign

REFERENCES = 20
"""The shared-reference pickle nests this many levels of pairs: 2**20 references."""

CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from eventlog.cli import main

status = main(sys.argv[3:])
sys.stdout.flush()
with open(sys.argv[2], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(status)
"""


def system_call(command: str) -> bytes:
    """LangGraph msgpack of a constructor value ``os.system(command)``."""
    return ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", command))))


def bytearray_pickle(size: int = 2**30) -> bytes:
    """A pickle that calls ``builtins.bytearray(size)`` (46 bytes)."""
    return (b"\x80\x02cbuiltins\nbytearray\nq\x00J" + size.to_bytes(4, "little")
            + b"\x85q\x01Rq\x02.")


def shared_pickle(levels: int = REFERENCES) -> bytes:
    """A pickle of nested pairs, each two references to the pair below: 2**levels
    references to one string in ~11 bytes a level."""
    out = bytearray(b"\x80\x02X\x01\x00\x00\x00x")
    for level in range(levels):
        index = level.to_bytes(4, "little")
        out += b"r" + index + b"j" + index + b"\x86"  # LONG_BINPUT, LONG_BINGET, TUPLE2
    return bytes(out + b".")


def maf_document(name: str, value: bytes) -> bytes:
    """An Agent Framework checkpoint whose state holds one pickled value."""
    return json.dumps({
        "workflow_name": name, "checkpoint_id": f"{name}-1", "timestamp": "2030-01-01T00:00:00",
        "messages": {}, "pending_request_info_events": {}, "iteration_count": 0,
        "state": {"value": {"__pickled__": base64.b64encode(value).decode(),
                            "__type__": "builtins:object"}},
    }).encode()


async def write_hostile(url: str, marker: Path, **options: Any) -> None:
    """The three threads, written through the public thread API."""
    state = {"v": 4, "id": "1", "ts": "2030-01-01T00:00:00+00:00",
             "channel_versions": {"x": "1"}, "versions_seen": {}, "updated_channels": ["x"]}
    encoding, data = JsonPlusSerializer().dumps_typed(state)
    async with open_log(url, **options) as log:
        await log.threads.put(TENANT, "lg", "1", state=Payload(encoding, data), channels={
            "x": ChannelValue("1", Payload("msgpack", system_call(f"touch {marker}.value")))})
        await log.threads.put_writes(TENANT, "lg", "1", "task-1", [
            (0, "x", Payload("msgpack", system_call(f"touch {marker}.write")))],
            task_path="~__pregel_pull, node")
        for name, pickled in (("bytes", bytearray_pickle()), ("shared", shared_pickle())):
            await log.threads.put(TENANT, name, f"{name}-1", run_key=f"{name}-1", step=0,
                                  state=Payload("maf-checkpoint+json",
                                                maf_document(name, pickled)))


@dataclass
class Child:
    """What one command did in its child process."""

    status: int
    out: str
    err: str
    rss_kb: int


def run_child(tmp_path: Path, *args: str) -> Child:
    """``eventlog ARGS`` in a child process under `LIMIT`; fails the test past `TIMEOUT`."""
    rss = tmp_path / f"rss-{uuid.uuid4().hex[:8]}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(LIMIT), str(rss), *args],
            capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"eventlog {' '.join(args)} was still running after {TIMEOUT} s")
    return Child(done.returncode, done.stdout, done.stderr,
                 int(rss.read_text()) if rss.exists() else -1)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A SQLite log holding the three threads, and the marker's path prefix."""
    where = tmp_path_factory.mktemp("hostile")
    url = f"sqlite:///{where / 'log.db'}"
    asyncio.run(write_hostile(url, where / "ran"))
    return url, where / "ran"


def ran(marker: Path) -> list[str]:
    """The marker files a command created (none, when nothing ran)."""
    return sorted(path.name for path in marker.parent.glob(f"{marker.name}.*"))


def bounded(child: Child) -> None:
    assert 0 == child.status, child.err
    assert 0 < child.rss_kb < MAX_RSS_KB, child.rss_kb


@pytest.mark.parametrize("command", ["inspect", "timeline"])
def test_a_langgraph_constructor_value_is_shown_not_run(
    hostile: tuple[str, Path], tmp_path: Path, command: str
) -> None:
    """``os.system(...)`` in a channel value and a pending write: shown as not decoded."""
    url, marker = hostile
    child = run_child(tmp_path, command, TENANT, "lg", "--json", "--url", url)
    bounded(child)
    assert [] == ran(marker)
    assert f"<os.system('touch {marker}.value') not decoded>" in child.out
    assert f"<os.system('touch {marker}.write') not decoded>" in child.out


def test_the_report_shows_a_langgraph_constructor_value_not_run(
    hostile: tuple[str, Path], tmp_path: Path
) -> None:
    url, marker = hostile
    page = tmp_path / "report.html"
    child = run_child(tmp_path, "report", TENANT, "lg", "-o", str(page), "--url", url)
    bounded(child)
    assert [] == ran(marker)
    assert f"<os.system('touch {marker}.value') not decoded>" in html.unescape(
        page.read_text())


@pytest.mark.parametrize("command", ["inspect", "timeline", "report"])
def test_a_pickle_calling_bytearray_of_a_gigabyte_allocates_nothing(
    hostile: tuple[str, Path], tmp_path: Path, command: str
) -> None:
    """``bytearray(2**30)`` is named, never called: the child stays small."""
    url, _ = hostile
    page = tmp_path / "report.html"
    extra = ["-o", str(page)] if command == "report" else ["--json"]
    child = run_child(tmp_path, command, TENANT, "bytes", *extra, "--url", url)
    bounded(child)
    shown = html.unescape(page.read_text()) if command == "report" else child.out
    assert f"<builtins.bytearray({2**30}) not decoded>" in shown


@pytest.mark.parametrize("command", ["inspect", "timeline", "report"])
def test_a_pickle_of_a_million_shared_references_is_shown_within_a_budget(
    hostile: tuple[str, Path], tmp_path: Path, command: str
) -> None:
    """2**20 references to one value are expanded up to the budget, then marked."""
    url, _ = hostile
    page = tmp_path / "report.html"
    extra = ["-o", str(page)] if command == "report" else ["--json"]
    child = run_child(tmp_path, command, TENANT, "shared", *extra, "--url", url)
    bounded(child)
    if command == "inspect":
        assert "past the 20,000 values a payload shows, not decoded>" in child.out


def test_export_copies_the_bytes_without_decoding_them(
    hostile: tuple[str, Path], tmp_path: Path
) -> None:
    url, marker = hostile
    out = tmp_path / "export.jsonl"
    bounded(run_child(tmp_path, "export", "--tenant", TENANT, str(out), "--url", url))
    assert [] == ran(marker)
    assert 0 < out.stat().st_size


def test_export_langgraph_refuses_a_value_naming_another_type(
    hostile: tuple[str, Path], tmp_path: Path
) -> None:
    """Into LangGraph's saver, the log is read as adoption reads a source: refused, named."""
    url, marker = hostile
    child = run_child(tmp_path, "export", "--tenant", TENANT, "langgraph",
                      str(tmp_path / "target.db"), "--thread", "lg", "--url", url)
    assert 0 != child.status
    assert [] == ran(marker)
    assert "os.system" in child.err
    assert "nothing of it was imported or run" in child.err


def langgraph_source(path: Path, marker: Path) -> None:
    """A SqliteSaver database whose checkpoint holds ``os.system(...)`` in a channel value
    and in a pending write (the saver's own bytes with the constructor planted in them)."""
    placeholder = ormsgpack.packb("__planted__")

    class Planting(JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            kind, data = super().dumps_typed(obj)
            return kind, data.replace(placeholder, system_call(f"touch {marker}.adopted"))

    with sqlite3.connect(path, check_same_thread=False) as connection:
        saver = SqliteSaver(connection, serde=Planting())
        saver.setup()
        checkpoint: Any = {"v": 4, "id": "1ef00000-0000-6000-8000-000000000001",
                           "ts": "2030-01-01T00:00:00+00:00",
                           "channel_values": {"x": "__planted__"},
                           "channel_versions": {"x": 1}, "versions_seen": {},
                           "updated_channels": ["x"]}
        config: Any = {"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}}
        stored = saver.put(config, checkpoint, {"source": "input", "step": -1}, {"x": 1})
        saver.put_writes(stored, [("x", "__planted__")], "task-1")


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "adopt"])
def test_adopting_a_langgraph_source_runs_nothing_of_it(tmp_path: Path, dry_run: bool) -> None:
    """The value is refused (exit status 2, named with its thread and checkpoint and how
    to allow a trusted type), the marker never appears, and nothing is adopted."""
    source, marker = tmp_path / "langgraph.db", tmp_path / "ran"
    langgraph_source(source, marker)
    log = f"sqlite:///{tmp_path / 'log.db'}"
    child = run_child(tmp_path, "adopt", "langgraph", str(source), "--tenant", TENANT,
                      *(["--dry-run"] if dry_run else []), "--url", log)
    assert (2, []) == (child.status, ran(marker)), child.err
    assert "os.system" in child.err
    assert "nothing of it was imported or run" in child.err
    assert "--allow-type os:system" in child.err
    assert ("a dry run: nothing was written" in child.err) == dry_run
    if not dry_run:
        listed = run_child(tmp_path, "timeline", TENANT, "t-1", "--json", "--url", log)
        assert "thread_checkpoint_put" not in listed.out


def test_postgresql_logs_are_read_the_same_way(tmp_path: Path) -> None:
    """The same threads in a PostgreSQL log: inspect runs and allocates nothing of them."""
    require_postgres()
    target = BackendTarget("postgresql", PG_URL, f"t_{uuid.uuid4().hex[:12]}")
    marker = tmp_path / "ran"
    asyncio.run(write_hostile(target.url, marker, **target.options()))
    try:
        for thread_id, shown in (("lg", "<os.system("), ("bytes", "<builtins.bytearray("),
                                 ("shared", "values a payload shows")):
            child = run_child(tmp_path, "inspect", TENANT, thread_id, "--json", "--url",
                              target.url, "--schema", target.schema)
            bounded(child)
            assert shown in child.out
        assert [] == ran(marker)
    finally:
        asyncio.run(drop_schema(target.schema))
