"""Adoption both ways between Agent Framework's checkpoint storages and the log.

`adopt_maf` takes workflows from any `CheckpointStorage` (Agent Framework's
`FileCheckpointStorage`, a user's own) into a tenant of the log; `export_maf` writes a
tenant's workflows into one. Both go through the storage protocol (``list_checkpoints``,
``load``, ``save``, ``list_checkpoint_ids``):

- **In**: a workflow's checkpoints are appended oldest first (by their timestamp, then
  iteration: the file store's "latest" is the newest timestamp, ours the last save, so
  both name the same one after adoption) as exactly the puts `EventlogCheckpointStorage`
  writes, preceded in the same append by a `ThreadAdopted` naming the source and each
  checkpoint's original timestamp. Checkpoints the workflow already holds are skipped, so
  a re-run adds only what is new.
- The protocol cannot list workflow names: a library caller names them;
  `file_store_workflows` finds them in a `FileCheckpointStorage` directory (each
  ``<checkpoint id>.json`` names its workflow), which is what ``eventlog adopt maf`` does
  without ``--workflow``. A file the store cannot load (which its own listing skips with a
  warning) is named with its checkpoint id (`AdoptionFailed`) after the checkpoints of its
  workflow that came before it were adopted.
- **Out**: each workflow's checkpoints in log order go to the target's ``save``, skipping
  the ids it already holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent_framework import CheckpointStorage, WorkflowCheckpoint

from eventlog.adapters._adoption import AdoptionReport, Progress, ThreadAppender
from eventlog.adapters._frameworks import MAF, MAF_ENCODING
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.checkpoints.thread_records import Adoption
from eventlog.errors import AdoptionFailed, EventLogError, SourceRefused
from eventlog.face import OpenLog
from eventlog.log import EventLog
from eventlog.validation import check_id
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS

__all__ = ["FileStoreContents", "adopt_maf", "export_maf", "file_store_workflows"]


@dataclass
class FileStoreContents:
    """What a `FileCheckpointStorage` directory holds, by its files."""

    workflows: list[str] = field(default_factory=list)
    """The workflow names its checkpoints carry, sorted."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Checkpoint id → why its file does not read as JSON with a workflow name."""
    stamps: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Checkpoint id → (workflow name, timestamp) as its file says."""


def file_store_workflows(directory: str | Path) -> FileStoreContents:
    """The workflows of a `FileCheckpointStorage` directory; `SourceRefused` if it is not
    one (missing, not a directory, or without a single checkpoint file)."""
    path = Path(directory)
    if not path.is_dir():
        raise SourceRefused(str(path), "no such directory" if not path.exists()
                            else "is not a directory")
    found = FileStoreContents()
    names: set[str] = set()
    for file in sorted(path.glob("*.json")):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            name = data["workflow_name"]
            if not isinstance(name, str):
                raise TypeError("workflow_name is not a string")
        except (OSError, ValueError, KeyError, TypeError) as error:
            found.unreadable[file.stem] = f"{type(error).__name__}: {error}"
            continue
        names.add(name)
        found.stamps[file.stem] = (name, str(data.get("timestamp", "")))
    if not names:
        what = ("none of its JSON files is a checkpoint (they name no workflow_name)"
                if found.unreadable else "it holds no checkpoint files (<id>.json)")
        raise SourceRefused(str(path), f"is not an Agent Framework file checkpoint store: "
                                       f"{what}")
    found.workflows = sorted(names)
    return found


async def adopt_maf(
    log: OpenLog,
    storage: CheckpointStorage,
    *,
    tenant_id: str,
    workflow_names: Iterable[str],
    dry_run: bool = False,
    source: str | None = None,
    allowed_checkpoint_types: Sequence[str] | None = None,
    contents: FileStoreContents | None = None,
    progress: Progress | None = None,
) -> AdoptionReport:
    """Adopt the named workflows of ``storage`` into the tenant: the checkpoints it does
    not hold yet, as `EventlogCheckpointStorage` writes them, each append marked
    `ThreadAdopted` from ``source`` (default: the storage's class name). With
    ``contents`` (`file_store_workflows`) a file the storage cannot load is named
    (`AdoptionFailed`) once its workflow's earlier checkpoints are in."""
    ours = EventlogCheckpointStorage(log, tenant_id=tenant_id,
                                     allowed_checkpoint_types=allowed_checkpoint_types)
    report = AdoptionReport(source=source or type(storage).__name__, target=tenant_id,
                            dry_run=dry_run)
    done = 0
    for name in sorted({check_id("workflow_name", str(n)) for n in workflow_names}):
        found = await storage.list_checkpoints(workflow_name=name)
        found.sort(key=_age)
        broken = await _broken(storage, name, found, contents)
        if broken is not None:
            found = [item for item in found if _age(item) < _stamp_age(broken[1])]
        await _adopt_workflow(ours, name, found, report)
        if broken is not None:
            raise AdoptionFailed(name, broken[0], broken[2])
        done += len(found)
        if progress is not None:
            progress(done, None)
    return report


async def _adopt_workflow(ours: EventlogCheckpointStorage, name: str,
                          found: list[WorkflowCheckpoint], report: AdoptionReport) -> None:
    if not found:
        return
    await ours._claims.check(name)
    base = await ours._threads.adoption_base(ours.tenant_id, name)
    appender = ThreadAppender(ours._threads, ours.tenant_id, name, framework=MAF, report=report,
                              version=base.version)
    for checkpoint in found:
        if ("", checkpoint.checkpoint_id) in base.checkpoints:
            report.skipped += 1
            continue
        try:
            state = ours._encode(checkpoint)
        except (EventLogError, TypeError, ValueError) as error:
            await appender.flush()  # what came before it stays, whole
            raise AdoptionFailed(name, checkpoint.checkpoint_id,
                                 f"{type(error).__name__}: {error}") from error
        await appender.add(Adoption(
            checkpoint_id=checkpoint.checkpoint_id, state=state,
            parent_id=checkpoint.previous_checkpoint_id, run_key=checkpoint.checkpoint_id,
            step=checkpoint.iteration_count,
            metadata={"timestamp": checkpoint.timestamp,
                      "graph_signature_hash": checkpoint.graph_signature_hash},
            ts=checkpoint.timestamp,
        ))
    await appender.flush()
    if appender.added:
        report.threads.append(name)


async def _broken(
    storage: CheckpointStorage, name: str, found: list[WorkflowCheckpoint],
    contents: FileStoreContents | None,
) -> tuple[str, str, str] | None:
    """The first file of this workflow (by its timestamp) the storage does not list,
    with the storage's own reason: (checkpoint id, timestamp, reason)."""
    if contents is None:
        return None
    listed = {item.checkpoint_id for item in found}
    missing = sorted((stamp, checkpoint_id) for checkpoint_id, (workflow, stamp)
                     in contents.stamps.items()
                     if workflow == name and checkpoint_id not in listed)
    for stamp, checkpoint_id in missing:
        try:
            await storage.load(checkpoint_id)
        except Exception as error:  # the storage's own words for why it does not load
            return checkpoint_id, stamp, f"{type(error).__name__}: {error}"
    return None


def _age(checkpoint: WorkflowCheckpoint) -> tuple[datetime, int]:
    return _stamp_age(checkpoint.timestamp)[0], checkpoint.iteration_count


def _stamp_age(stamp: str) -> tuple[datetime, int]:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        when = datetime.min
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.now().astimezone().tzinfo)
    return when, -1


async def export_maf(
    log: OpenLog,
    storage: CheckpointStorage,
    *,
    tenant_id: str,
    workflow_names: Iterable[str] | None = None,
    target: str | None = None,
    allowed_checkpoint_types: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> AdoptionReport:
    """Write the tenant's Agent Framework workflows (every one, or ``workflow_names``)
    into ``storage`` with its ``save``, oldest first, skipping the ids it holds; a
    workflow built with ``storage`` then restores from them."""
    ours = EventlogCheckpointStorage(log, tenant_id=tenant_id,
                                     allowed_checkpoint_types=allowed_checkpoint_types)
    report = AdoptionReport(source=tenant_id, target=target or type(storage).__name__)
    names = (sorted({check_id("workflow_name", str(n)) for n in workflow_names})
             if workflow_names is not None else await _maf_workflows(log, tenant_id))
    done = 0
    for name in names:
        held = set(await storage.list_checkpoint_ids(workflow_name=name))
        exported = 0
        for checkpoint in await ours.list_checkpoints(workflow_name=name):
            if checkpoint.checkpoint_id in held:
                report.skipped += 1
                continue
            await storage.save(checkpoint)
            exported += 1
        report.checkpoints += exported
        if exported:
            report.threads.append(name)
        done += exported
        if progress is not None:
            progress(done, None)
    return report


async def _maf_workflows(log: EventLog, tenant_id: str) -> list[str]:
    rows = await log.query(ViewQuery(
        THREAD_CHECKPOINTS, {"tenant_id": check_id("tenant_id", tenant_id)},
        columns=("thread_id", "state_encoding"),
    ))
    return sorted({row["thread_id"] for row in rows if row["state_encoding"] == MAF_ENCODING})
