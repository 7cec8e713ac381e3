"""The public surface: declared in one place, sorted, resolvable, and not drifting."""

from __future__ import annotations

import importlib
import re
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
    "SchemaNotCurrent", "ConsumerError", "ConsumerFenced", "ConsumerHeld",
    "ConsumerScopeChanged", "UnknownConsumer", "ConsumerInfo",
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


def test_the_public_names_are_written_once() -> None:
    """``eventlog.__all__`` and the lazy loader's table are both read from the one list of
    imports that type checkers read: no name is in one and not the other, none twice."""
    block = (ROOT / "eventlog" / "__init__.py").read_text(encoding="utf-8")
    imported = [line.split()[-1] for line in block.splitlines()
                if line.startswith("    from eventlog")]
    assert (sorted(imported), len(imported)) == (eventlog.__all__, len(set(imported)))
    assert all(line.split()[-1] == line.split()[-3] for line in block.splitlines()
               if line.startswith("    from eventlog")), "each name re-exported `as` itself"


def test_type_checkers_are_shown_every_public_name() -> None:
    """tests/typing/public_names.py (checked by ``mypy --strict tests/typing``) imports
    every name of ``eventlog.__all__`` from the package, and no other."""
    source = (ROOT / "tests" / "typing" / "public_names.py").read_text(encoding="utf-8")
    imports = source.split("from eventlog import (")[1].split(")")[0]
    assert eventlog.__all__ == sorted(name.strip(" ,") for name in imports.split()
                                      if name.strip(" ,"))


def test_projections_export_every_public_name_they_import() -> None:
    """Each public class, function or constant the package binds is in its __all__."""
    bound = {name for name, value in vars(projections).items()
             if not name.startswith("_") and not isinstance(value, type(projections))}
    assert set() == bound - set(projections.__all__)


def test_the_error_tree_names_every_error() -> None:
    """The errors module's docstring draws each of its error classes (the ones other
    modules raise included), under the parent it subclasses."""
    classes = {name: value for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, Exception)}
    drawn = {line.split("── ")[1].split()[0]: line.index("── ")
             for line in (errors.__doc__ or "").splitlines() if "── " in line}
    drawn["EventLogError"] = 1  # the root, drawn bare: its children's "── " is 4 further
    assert set(classes) == set(drawn)
    for name, cls in classes.items():
        parents = [parent.__name__ for parent in cls.__bases__
                   if issubclass(parent, errors.EventLogError)]
        assert name == "EventLogError" or drawn[parents[0]] + 4 == drawn[name], name


@pytest.mark.parametrize(
    ("module", "name", "also"),
    [
        ("eventlog.interrupts", "CapacityExceeded", Exception),
        ("eventlog.interrupts.inputs", "CapacityExceeded", Exception),
        ("eventlog.transfer", "ImportRefused", Exception),
        ("eventlog.transfer", "ExportIncomplete", Exception),
        ("eventlog.adapters._loops", "WrongThread", RuntimeError),
        ("eventlog.adapters._loops", "NotRunning", RuntimeError),
    ],
)
def test_errors_raised_elsewhere_live_in_the_tree_and_import_where_they_did(
    module: str, name: str, also: type[Exception],
) -> None:
    """They are defined in eventlog.errors, still import from the module they came from,
    and keep the classes they subclassed (an ``except RuntimeError`` still catches)."""
    cls = getattr(importlib.import_module(module), name)
    assert (cls, True, True) == (getattr(errors, name), issubclass(cls, errors.EventLogError),
                                 issubclass(cls, also))


def test_checkpoints_docstring_names_each_of_its_modules() -> None:
    """The package docstring's module list is the package's modules, no more, no less."""
    import eventlog.checkpoints as package

    listed = (package.__doc__ or "").split("Modules:")[1]
    named = set(re.findall(r"`([a-z_]+)`", listed))
    here = {path.stem for path in (ROOT / "eventlog" / "checkpoints").glob("*.py")} - {
        "__init__"}
    assert here == named
