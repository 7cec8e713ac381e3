"""A copy made with ``export --without-state`` verifies: its import records the blobs it
withheld, and ``verify`` reports them as a notice, while a blob missing for any other
reason is still a finding."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import msgspec
import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_OK
from eventlog.hashing import content_digest
from tests.cli.helpers import make_runner
from tests.cli.test_transfer import build
from tests.conftest import BackendTarget, fresh_id
from tests.test_tamper import sql

sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


def copy_without_state(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                       copy: BackendTarget) -> tuple[str, int, int]:
    """A tenant of three checkpoints over two states (one shared by two sessions) exported
    without state and imported into ``copy``: the tenant and both commands' withheld
    counts."""
    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("checkpoint", 1, 0, 0, 0),
                                       ("checkpoint", 1, 0, 1, 2)]))
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--without-state", "--tenant",
                                           tenant, str(path))
    imported = make_runner(capsys, copy)("import", "--json", str(path))
    assert (EXIT_OK, EXIT_OK) == (exported.status, imported.status), imported.err
    assert (exported.json()["events"], exported.json()["streams"]) == (
        imported.json()["events_imported"], imported.json()["streams_imported"])
    return tenant, exported.json()["blobs_withheld"], imported.json()["blobs_withheld"]


@pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)
def test_a_copy_without_state_verifies_with_a_notice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: BackendTarget
) -> None:
    """Export and import both count 2 blobs withheld; verify exits 0 and counts them as
    withheld, with no blob finding."""
    _tenant, exported, imported = copy_without_state(capsys, tmp_path, target)
    ran = make_runner(capsys, target)("verify", "--json")
    report = ran.json()
    assert (2, 2) == (exported, imported)
    assert (EXIT_OK, True, 2, []) == (ran.status, report["ok"], report["blobs_withheld"],
                                      report["blob_problems"]), ran.out


def test_people_read_the_withheld_blobs_as_a_notice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without --json the blobs line is ok and a notice counts the withheld blobs."""
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    copy_without_state(capsys, tmp_path, copy)
    ran = make_runner(capsys, copy)("verify")
    assert EXIT_OK == ran.status
    assert "State blobs: 2 checked: ok\n  notice: 2 blobs withheld by an import" in ran.out


@sql_stores
def test_a_blob_lost_beside_withheld_ones_is_still_a_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: BackendTarget
) -> None:
    """A checkpoint written in the copy after the import, its blob then deleted behind the
    log's back: blob_missing, while the imported blobs stay withheld."""
    tenant, _exported, _imported = copy_without_state(capsys, tmp_path, target)
    state = {"written": "in the copy"}

    async def write() -> None:
        async with open_log(target.url, **target.options()) as log:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id=tenant, session_id="s9", run_id=uuid.uuid4(), state=state))

    asyncio.run(write())
    digest = content_digest(msgspec.json.encode(state))
    asyncio.run(sql(target, "DELETE FROM blobs WHERE digest = $1", digest))
    report = make_runner(capsys, target)("verify", "--json").json()
    assert (False, 2, [(digest.hex(), "blob_missing", ["session:s9"])]) == (
        report["ok"], report["blobs_withheld"],
        [(p["blob"], p["kind"], p["streams"]) for p in report["blob_problems"]])


def test_importing_the_file_again_records_nothing_more(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same file imported twice: the second import writes nothing, withholds nothing,
    and the copy holds one record of withheld state."""
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    copy_without_state(capsys, tmp_path, copy)
    again = make_runner(capsys, copy)("import", "--json", str(tmp_path / "t.jsonl")).json()
    records = make_runner(capsys, copy)("log", "--json", "--type", "state_withheld")
    assert (0, 0, 1) == (again["events_imported"], again["blobs_withheld"],
                         len(records.json_lines()))


def test_state_supplied_later_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A copy without state, then a later export with state of the same tenant whose new
    checkpoint names the withheld state again: the blob arrives holding the new event's
    reference only, and verify accepts that count for a blob once withheld."""
    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0)]))
    source_run, copy_run = make_runner(capsys, source), make_runner(capsys, copy)
    source_run("export", "--without-state", "--tenant", tenant, str(tmp_path / "1.jsonl"))
    copy_run("import", str(tmp_path / "1.jsonl"))
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 1, 0)]))
    source_run("export", "--tenant", tenant, str(tmp_path / "2.jsonl"))
    imported = copy_run("import", "--json", str(tmp_path / "2.jsonl")).json()
    report = copy_run("verify", "--json").json()
    assert (1, 1, True, 0) == (imported["events_imported"], imported["blobs_imported"],
                               report["ok"], report["blobs_withheld"]), report


def test_a_session_exported_from_a_copy_without_state_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One session exported (with state) from a copy made without state carries the
    import's record, so its own copy verifies too, counting the session's blob withheld."""
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    again = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'again.db'}")
    tenant, _exported, _imported = copy_without_state(capsys, tmp_path, copy)
    path = tmp_path / "s0.jsonl"
    exported = make_runner(capsys, copy)("export", "--tenant", tenant, "--session", "s0",
                                         str(path))
    imported = make_runner(capsys, again)("import", str(path))
    ran = make_runner(capsys, again)("verify", "--json")
    assert (EXIT_OK, EXIT_OK) == (exported.status, imported.status), imported.err
    assert (EXIT_OK, 1) == (ran.status, ran.json()["blobs_withheld"]), ran.out


def test_a_blob_lost_before_the_import_is_never_recorded_as_withheld(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A copy made with state loses a blob behind the log's back; a later file without
    state whose new checkpoint names the same state does not turn that loss into a
    notice: it stays blob_missing."""
    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0)]))
    source_run, copy_run = make_runner(capsys, source), make_runner(capsys, copy)
    source_run("export", "--tenant", tenant, str(tmp_path / "1.jsonl"))
    copy_run("import", str(tmp_path / "1.jsonl"))
    asyncio.run(sql(copy, "DELETE FROM blobs"))
    asyncio.run(build(source, tenant, [("checkpoint", 1, 0, 0, 0)]))
    source_run("export", "--without-state", "--tenant", tenant, str(tmp_path / "2.jsonl"))
    imported = copy_run("import", "--json", str(tmp_path / "2.jsonl")).json()
    report = copy_run("verify", "--json").json()
    assert (1, 0, 0, ["blob_missing"]) == (
        imported["events_imported"], imported["blobs_withheld"], report["blobs_withheld"],
        [problem["kind"] for problem in report["blob_problems"]])


def test_purged_state_is_not_counted_as_withheld(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A deleted session's purged state is not withheld: export and import both count only
    the live session's blob, and the copy verifies."""
    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("checkpoint", 2, 0, 0, 3),
                                       ("delete", 2)]))
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--without-state", "--tenant",
                                           tenant, str(path)).json()
    imported = make_runner(capsys, copy)("import", "--json", str(path)).json()
    verified = make_runner(capsys, copy)("verify", "--json")
    assert (1, 1, EXIT_OK, 1) == (exported["blobs_withheld"], imported["blobs_withheld"],
                                  verified.status, verified.json()["blobs_withheld"])


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_a_langgraph_tenant_without_state_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: BackendTarget
) -> None:
    """A compiled LangGraph graph's threads (an interrupt, its resume, a state update, a
    deleted thread) copied without state: export, import and verify count the same
    withheld blobs (checkpoints, channel values, pending writes) and verify exits 0."""
    from langgraph.types import Command

    from eventlog.adapters.langgraph import AsyncEventlogSaver
    from tests.adapters.test_langgraph_graph import build as graph_of
    from tests.adapters.test_langgraph_graph import thread

    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    tenant = fresh_id("t")

    async def play() -> None:
        async with AsyncEventlogSaver.from_conn_string(source.url, tenant_id=tenant) as saver:
            graph = graph_of(saver)
            for name in ("kept", "gone"):
                await graph.ainvoke({"items": []}, thread(name))
            await graph.ainvoke(Command(resume="yes"), thread("kept"))
            await graph.aupdate_state(thread("kept"), {"items": ["by hand"]})
            await saver.adelete_thread("gone")

    asyncio.run(play())
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--without-state", "--tenant",
                                           tenant, str(path)).json()
    imported = make_runner(capsys, target)("import", "--json", str(path)).json()
    verified = make_runner(capsys, target)("verify", "--json")
    counts = (exported["blobs_withheld"], imported["blobs_withheld"],
              verified.json()["blobs_withheld"])
    assert (EXIT_OK, True) == (verified.status, counts[0] > 0), verified.out
    assert (counts[0], counts[0]) == counts[1:]


async def test_an_import_cut_short_leaves_no_event_without_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import dies after its first batch (the record and one event, here): what it
    committed verifies, its state withheld; importing the file again completes it."""
    import io

    import eventlog.transfer as transfer

    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    tenant = fresh_id("t")
    await asyncio.to_thread(asyncio.run, build(source, tenant, [
        ("checkpoint", 0, 0, 0, 0), ("checkpoint", 1, 0, 0, 2), ("checkpoint", 2, 0, 0, 3)]))
    exported = io.BytesIO()
    async with open_log(source.url) as log:
        await transfer.export_log(log, exported, tenant_id=tenant, with_state=False)
    monkeypatch.setattr(transfer, "_MAX_GROUP", 2)
    async with open_log(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        real = copy.append_recorded
        calls = 0

        async def dies_after_one(*args: object, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            if calls > 1:
                raise ConnectionError("the process died")
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(copy, "append_recorded", dies_after_one)
        with pytest.raises(ConnectionError):
            await transfer.import_log(copy, exported)
        cut = await copy.verify(tenant)
        monkeypatch.setattr(copy, "append_recorded", real)
        exported.seek(0)
        await transfer.import_log(copy, exported)
        done = await copy.verify(tenant)
    assert ([], 1, [], 3) == (cut.problems, cut.withheld_blobs, done.problems,
                              done.withheld_blobs)


def test_an_agent_framework_workflow_without_state_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An Agent Framework workflow that paused for a human and resumed with the answer,
    copied without state: verify of the copy exits 0, counting what export and import
    both counted as withheld."""
    from eventlog.adapters.maf import EventlogCheckpointStorage
    from tests.adapters.test_maf import build as workflow_of

    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    tenant = fresh_id("t")

    async def play() -> None:
        async with EventlogCheckpointStorage.from_url(source.url, tenant_id=tenant) as storage:
            paused = await workflow_of(storage).run("order")
            request = paused.get_request_info_events()[0]
            latest = await storage.get_latest(workflow_name="payments")
            assert latest is not None
            await workflow_of(storage).run(checkpoint_id=latest.checkpoint_id,
                                           responses={request.request_id: "yes"})

    asyncio.run(play())
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--without-state", "--tenant",
                                           tenant, str(path)).json()
    imported = make_runner(capsys, copy)("import", "--json", str(path)).json()
    verified = make_runner(capsys, copy)("verify", "--json")
    counts = (exported["blobs_withheld"], imported["blobs_withheld"],
              verified.json()["blobs_withheld"])
    assert (EXIT_OK, True) == (verified.status, counts[0] > 0), verified.out
    assert (counts[0], counts[0]) == counts[1:]
