"""What the adoptions share (`langgraph_adoption`, `maf_adoption`): the report, the
progress callback, and the chunked, fenced appends of one thread's adopted checkpoints.
This module imports neither framework."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from eventlog.checkpoints.thread_records import Adoption
from eventlog.checkpoints.threads import ThreadCheckpoints

CHUNK = 200
"""The most checkpoints one adoption append carries."""

Progress = Callable[[int, int | None], None]
"""Called with (checkpoints done, checkpoints in all, when known)."""


@dataclass
class AdoptionReport:
    """What an adoption or an export did (or, with ``dry_run``, would do)."""

    source: str
    target: str
    dry_run: bool = False
    threads: list[str] = field(default_factory=list)
    """The threads (workflows) that received checkpoints or writes (or would)."""
    checkpoints: int = 0
    """Checkpoints adopted (or exported)."""
    writes: int = 0
    """Pending writes carried with them."""
    skipped: int = 0
    """Checkpoints the receiving side already held (an earlier run's)."""


class ThreadAppender:
    """One thread's adopted checkpoints, appended `CHUNK` at a time, each append fenced on
    the version the one before left (the first on the version the adopter read)."""

    def __init__(self, threads: ThreadCheckpoints, tenant_id: str, thread_id: str, *,
                 framework: str, report: AdoptionReport, version: int) -> None:
        self._threads = threads
        self._tenant_id = tenant_id
        self._thread_id = thread_id
        self._framework = framework
        self._report = report
        self._version = version
        self._chunk: list[Adoption] = []
        self.added = 0

    async def add(self, adoption: Adoption, *, new: bool = True) -> None:
        """Count one adoption (a new checkpoint, or writes only) and append when full."""
        self._chunk.append(adoption)
        self.added += 1
        self._report.checkpoints += 1 if new else 0
        self._report.writes += sum(len(task.writes) for task in adoption.writes)
        if len(self._chunk) >= CHUNK:
            await self.flush()

    async def flush(self) -> None:
        """Append what is waiting (nothing under ``dry_run``)."""
        chunk, self._chunk = self._chunk, []
        if not chunk or self._report.dry_run:
            return
        self._version = await self._threads.adopt(
            self._tenant_id, self._thread_id, chunk, framework=self._framework,
            source=self._report.source, expected_version=self._version,
        )
