"""Adoption from Agent Framework's own `FileCheckpointStorage` into the log, and export
back: a real workflow paused on a request restores on the other store and ends exactly as
it does on the file store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_framework import FileCheckpointStorage, WorkflowRunState

from eventlog import open_log
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.adapters.maf_adoption import adopt_maf, export_maf, file_store_workflows
from eventlog.checkpoints import ThreadAdopted
from eventlog.errors import AdoptionFailed, SourceRefused
from projections import compare_views
from tests.adapters.test_maf import build

TENANT = "acme"


async def _paused(storage: FileCheckpointStorage | EventlogCheckpointStorage) -> str:
    """Run the payments workflow until it asks; the request's id."""
    paused = await build(storage).run("order")
    assert WorkflowRunState.IDLE_WITH_PENDING_REQUESTS == paused.get_final_state()
    return str(paused.get_request_info_events()[0].request_id)


async def _finish(storage: FileCheckpointStorage | EventlogCheckpointStorage,
                  request_id: str) -> list[object]:
    latest = await storage.get_latest(workflow_name="payments")
    assert latest is not None
    done = await build(storage).run(checkpoint_id=latest.checkpoint_id,
                                    responses={request_id: "yes"})
    assert WorkflowRunState.IDLE == done.get_final_state()
    return list(done.get_outputs())


async def _lineage(storage: FileCheckpointStorage | EventlogCheckpointStorage
                   ) -> list[tuple[object, ...]]:
    found = await storage.list_checkpoints(workflow_name="payments")
    return sorted((c.checkpoint_id, c.previous_checkpoint_id, c.timestamp, c.iteration_count,
                   c.state, sorted(c.pending_request_info_events)) for c in found)


@pytest.mark.adopt
async def test_a_paused_workflow_restores_on_the_log_as_on_the_file_store(
    tmp_path: Path,
) -> None:
    """Paused on FileCheckpointStorage, adopted, restored with EventlogCheckpointStorage:
    the same lineage and latest, the same output as restoring on the file store; a re-run
    adopts nothing; the log verifies and says where the checkpoints came from."""
    files = FileCheckpointStorage(tmp_path / "files")
    request_id = await _paused(files)
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        contents = file_store_workflows(tmp_path / "files")
        assert ["payments"] == contents.workflows
        report = await adopt_maf(log, files, tenant_id=TENANT, workflow_names=contents.workflows,
                                 source=str(tmp_path / "files"), contents=contents)
        ours = EventlogCheckpointStorage(log, tenant_id=TENANT)
        assert (["payments"], len(await _lineage(files))) == (report.threads,
                                                              report.checkpoints)
        assert await _lineage(files) == await _lineage(ours)
        latest_ours = await ours.get_latest(workflow_name="payments")
        latest_files = await files.get_latest(workflow_name="payments")
        assert latest_ours is not None
        assert latest_files is not None
        assert latest_files.checkpoint_id == latest_ours.checkpoint_id
        again = await adopt_maf(log, files, tenant_id=TENANT, workflow_names=["payments"])
        assert (0, report.checkpoints) == (again.checkpoints, again.skipped)

        assert await _finish(files, request_id) == await _finish(ours, request_id)
        assert (await log.verify()).ok
        assert [] == await compare_views(log)
        marks = [e.event async for e in log.read_stream(TENANT, "thread:payments")
                 if isinstance(e.event, ThreadAdopted)]
        assert [("Agent Framework", str(tmp_path / "files"))] == [
            (m.framework, m.source) for m in marks]


@pytest.mark.adopt
async def test_export_then_restore_on_the_file_store(tmp_path: Path) -> None:
    """The reverse: paused on the log, exported to a file store, restored there: the same
    lineage and output; exporting again writes nothing."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        ours = EventlogCheckpointStorage(log, tenant_id=TENANT)
        request_id = await _paused(ours)
        files = FileCheckpointStorage(tmp_path / "files")
        report = await export_maf(log, files, tenant_id=TENANT)
        assert ["payments"] == report.threads
        assert await _lineage(ours) == await _lineage(files)
        again = await export_maf(log, files, tenant_id=TENANT)
        assert (0, report.checkpoints) == (again.checkpoints, again.skipped)
        assert await _finish(ours, request_id) == await _finish(files, request_id)


async def test_a_directory_that_is_not_a_file_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceRefused, match="no such directory"):
        file_store_workflows(tmp_path / "missing")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hello")
    with pytest.raises(SourceRefused, match="not an Agent Framework file checkpoint store"):
        file_store_workflows(tmp_path / "notes")
    (tmp_path / "notes" / "b.json").write_text(json.dumps({"other": 1}))
    with pytest.raises(SourceRefused, match="none of its JSON files is a checkpoint"):
        file_store_workflows(tmp_path / "notes")


async def test_a_checkpoint_file_that_does_not_load_is_named_and_a_rerun_continues(
    tmp_path: Path,
) -> None:
    """A file the store cannot load (its state tampered) is named by checkpoint id after
    the workflow's earlier checkpoints were adopted; repaired, a re-run finishes."""
    files = FileCheckpointStorage(tmp_path / "files")
    await _paused(files)
    saved = sorted(await files.list_checkpoints(workflow_name="payments"),
                   key=lambda c: c.timestamp)
    broken = saved[-1].checkpoint_id
    path = tmp_path / "files" / f"{broken}.json"
    kept = path.read_text()
    data = json.loads(kept)
    data["state"] = {"__pickled__": "not base64 at all", "__type__": "x:y"}
    path.write_text(json.dumps(data))
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        contents = file_store_workflows(tmp_path / "files")
        with pytest.raises(AdoptionFailed, match=broken):
            await adopt_maf(log, files, tenant_id=TENANT, workflow_names=contents.workflows,
                            contents=contents)
        ours = EventlogCheckpointStorage(log, tenant_id=TENANT)
        assert [c.checkpoint_id for c in saved[:-1]] == await ours.list_checkpoint_ids(
            workflow_name="payments")
        assert (await log.verify()).ok
        path.write_text(kept)
        report = await adopt_maf(log, files, tenant_id=TENANT, workflow_names=["payments"])
        assert (1, len(saved) - 1) == (report.checkpoints, report.skipped)
        assert await _lineage(files) == await _lineage(ours)
