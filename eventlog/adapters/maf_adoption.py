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
- **Files are checked before Agent Framework decodes them.** `file_store_workflows` walks
  each file's pickles with our own opcode walker (`eventlog.adapters._maf_guard`): a file
  that would make MAF's unpickler allocate far more than its length, or nested past its
  depth, is listed in ``refused`` with the budget it is past. Given those ``contents``,
  `adopt_maf` loads the workflow's files one by one (``storage.load``) and never the
  refused ones, since the store's own listing decodes every file of the directory. (The
  directory is read twice, by the walk and by the store: a file replaced between the two
  is not checked; adopt from a directory nobody writes meanwhile.) A storage given
  without ``contents`` decodes in its own way, unchecked.
- **Out**: each workflow's checkpoints in log order go to the target's ``save``, skipping
  the ids it already holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent_framework import CheckpointStorage, WorkflowCheckpoint, WorkflowCheckpointException

from eventlog.adapters._adoption import AdoptionReport, Progress, ThreadAppender
from eventlog.adapters._frameworks import MAF, MAF_ENCODING
from eventlog.adapters._maf_guard import read_document
from eventlog.adapters._safe_values import Unreadable
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
    refused: dict[str, str] = field(default_factory=dict)
    """Checkpoint id → the budget its file is past (it is never handed to the store)."""


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
            data, refused = _read_file(file)
            name = data["workflow_name"]
            if not isinstance(name, str):
                raise TypeError("workflow_name is not a string")
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
            found.unreadable[file.stem] = f"{type(error).__name__}: {error}"
            continue
        names.add(name)
        found.stamps[file.stem] = (name, str(data.get("timestamp", "")))
        if refused is not None:
            found.refused[file.stem] = refused
    if not names:
        what = ("none of its JSON files is a checkpoint (they name no workflow_name)"
                if found.unreadable else "it holds no checkpoint files (<id>.json)")
        raise SourceRefused(str(path), f"is not an Agent Framework file checkpoint store: "
                                       f"{what}")
    found.workflows = sorted(names)
    return found


def _read_file(file: Path) -> tuple[dict[str, object], str | None]:
    """A checkpoint file's JSON object, and why its values are refused (None if they are
    within the budgets)."""
    text = file.read_text(encoding="utf-8")
    refused: str | None = None
    try:
        data = read_document(text)
    except Unreadable as error:
        data, refused = json.loads(text), str(error)  # the names still show whose it is
    if not isinstance(data, dict):
        raise TypeError("the file holds no JSON object")
    return data, refused


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
        if contents is None:
            found, broken = await storage.list_checkpoints(workflow_name=name), None
        else:
            found, broken = await _load_files(storage, name, contents)
        found.sort(key=_age)
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
        except (EventLogError, TypeError, ValueError, WorkflowCheckpointException) as error:
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


async def _load_files(
    storage: CheckpointStorage, name: str, contents: FileStoreContents,
) -> tuple[list[WorkflowCheckpoint], tuple[str, str, str] | None]:
    """The workflow's checkpoints, loaded one file at a time (never a refused one), and the
    first file of it (by its timestamp) that is refused or does not load: (checkpoint id,
    timestamp, reason)."""
    found: list[WorkflowCheckpoint] = []
    broken: tuple[str, str, str] | None = None
    for stamp, checkpoint_id in sorted((stamp, checkpoint_id) for checkpoint_id, (workflow, stamp)
                                       in contents.stamps.items() if workflow == name):
        reason = contents.refused.get(checkpoint_id)
        if reason is None:
            try:
                loaded = await storage.load(checkpoint_id)
            except Exception as error:  # the storage's own words for why it does not load
                reason = f"{type(error).__name__}: {error}"
            else:
                if loaded.workflow_name == name:
                    found.append(loaded)
                continue
        if broken is None or _stamp_age(stamp) < _stamp_age(broken[1]):
            broken = checkpoint_id, stamp, reason
    return found, broken


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
