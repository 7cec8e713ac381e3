"""Fresh SQLite test logs copied from one migrated file, not migrated each time.

Opening a log on a new SQLite file ran every Alembic migration: ~115 ms per test on this
machine, ~55 s of the default run's work over the SQLite contract suite's 470 tests (the
shipped head script now makes a new file in ~20 ms; a copy is still cheaper). The
first such test of a process opens a log on a template file in a directory of its own and
closes it (its write-ahead log checkpointed into the file); each test then gets a copy of
that file, which the log opens as it opens any existing, current store. A closed, migrated,
empty file is what a first open leaves behind, so a test cannot tell the copy from a new
one (the tests of the migrations themselves open empty files). With
``EVENTLOG_TEST_MIGRATE_EACH=1`` every file is migrated as before.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from eventlog import open_log

_TEMPLATE: Path | None = None
_LOCK = threading.Lock()


def _make_template() -> Path:
    path = Path(tempfile.mkdtemp(prefix="eventlog-sqlite-template-")) / "log.db"

    async def migrate() -> None:
        async with open_log(f"sqlite:///{path}"):
            pass

    # Its own thread: a fixture may be asked for while an event loop runs in this one.
    failure: list[BaseException] = []
    worker = threading.Thread(target=lambda: _run(migrate, failure))
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    for leftover in ("log.db-wal", "log.db-shm"):
        if (path.parent / leftover).exists():
            raise RuntimeError(f"the template log left {leftover} behind: not a closed file")
    return path


def _run(migrate: Callable[[], Coroutine[Any, Any, None]],
         failure: list[BaseException]) -> None:
    try:
        asyncio.run(migrate())
    except BaseException as error:  # handed to the waiting thread
        failure.append(error)


def fresh_sqlite_url(directory: Path, name: str = "log.db") -> str:
    """The URL of a new, migrated, empty SQLite log file in ``directory``."""
    target = directory / name
    if os.environ.get("EVENTLOG_TEST_MIGRATE_EACH") != "1":
        global _TEMPLATE
        with _LOCK:
            if _TEMPLATE is None:
                _TEMPLATE = _make_template()
        shutil.copyfile(_TEMPLATE, target)
    return f"sqlite:///{target}"
