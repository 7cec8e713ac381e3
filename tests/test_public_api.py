"""The public surface: declared in one place, sorted, resolvable, and not drifting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import eventlog
import projections
from eventlog import errors

ROOT = Path(__file__).resolve().parent.parent

LOG_API = {
    "ANY", "NO_STREAM", "AppendResult", "Event", "EventLog", "EventRegistry", "ExpectedVersion",
    "LogPage", "RecordedEvent", "StreamProblem", "VerifyReport", "open_log", "register_event",
    "default_registry", "content_digest", "Clock", "system_clock", "DEFAULT_URL",
    "EventLogError", "InvalidInput", "InvalidId", "InvalidEvent", "PayloadTooLarge",
    "InvalidURL", "UnknownEventType", "StateDecodeError", "VersionConflict", "SchemaError",
    "UnknownSchemaRevision", "StoreLocked", "StorageError", "CommitOutcomeUnknown",
}
"""What the log promises; other issues add names, so this is a floor, not the list."""

PROJECTIONS_API = {
    "AT_POSITION", "Change", "Delete", "INLINE_PROJECTIONS", "In", "InsertIfAbsent",
    "Projection", "StreamHeads", "Update", "Upsert", "ViewDifference", "ViewQuery",
    "ViewTables", "compare_views", "fold_events", "rebuild",
}


@pytest.mark.parametrize("module", [eventlog, projections], ids=lambda m: m.__name__)
def test_all_is_sorted_and_unique(module: object) -> None:
    """__all__ is in sorted order with no name twice."""
    names = list(module.__all__)  # type: ignore[attr-defined]
    assert sorted(set(names)) == names


@pytest.mark.parametrize("module", [eventlog, projections], ids=lambda m: m.__name__)
def test_every_exported_name_resolves(module: object) -> None:
    """Each name in __all__ is an attribute of the package."""
    missing = [name for name in module.__all__ if not hasattr(module, name)]  # type: ignore[attr-defined]
    assert [] == missing


def test_log_api_is_still_exported() -> None:
    """Every name the log promised is still in eventlog.__all__."""
    assert set() == LOG_API - set(eventlog.__all__)


def test_projections_api_is_still_exported() -> None:
    """Every projections name the stores rely on is still in projections.__all__."""
    assert set() == PROJECTIONS_API - set(projections.__all__)


def test_every_error_is_an_event_log_error() -> None:
    """Callers can catch every error of ours with one except clause."""
    classes = [getattr(errors, name) for name in dir(errors)
               if isinstance(getattr(errors, name), type)
               and issubclass(getattr(errors, name), Exception)]
    assert [] == [cls.__name__ for cls in classes if not issubclass(cls, eventlog.EventLogError)]


def test_bad_input_errors_are_value_errors() -> None:
    """InvalidInput and InvalidURL are also ValueErrors, as callers of a library expect."""
    assert all(issubclass(cls, ValueError) for cls in (
        eventlog.InvalidInput, eventlog.InvalidId, eventlog.InvalidEvent,
        eventlog.PayloadTooLarge, eventlog.InvalidURL,
    ))


@pytest.mark.parametrize(
    "statement",
    [
        "import projections",
        "import projections.rebuilding",
        "from projections import compare_views",
        "import eventlog.records",
        "import eventlog",
    ],
)
def test_each_package_imports_first_in_a_fresh_interpreter(statement: str) -> None:
    """No import cycle: either package (or a submodule) can be the first import."""
    result = subprocess.run([sys.executable, "-c", statement], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert (0, "") == (result.returncode, result.stderr)


def test_sqlite_users_never_import_asyncpg(tmp_path: Path) -> None:
    """Backends load lazily: opening a SQLite log does not import the PostgreSQL driver."""
    script = (
        "import asyncio, sys, eventlog\n"
        "async def main():\n"
        f"    async with eventlog.open_log('sqlite:///{tmp_path / 'log.db'}'):\n"
        "        pass\n"
        "asyncio.run(main())\n"
        "print('asyncpg' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert "False" == result.stdout.splitlines()[-1]


def test_packages_ship_py_typed() -> None:
    """Both packages carry the PEP 561 marker."""
    assert [True, True] == [(ROOT / package / "py.typed").exists()
                            for package in ("eventlog", "projections")]
