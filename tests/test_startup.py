"""Start-up: importing the library and asking the command for help cost about what the core
dependencies' import costs, and load nothing a call has not needed yet.

The budget is a ratio measured in one run: each case beside the floor (importing the
project's own core dependencies, ``sqlalchemy.ext.asyncio, asyncpg, msgspec, aiosqlite``)
in fresh processes, interleaved round by round, the medians compared. Each figure is the
child's CPU time (``RUSAGE_CHILDREN``), not wall time, so a loaded machine slows both
sides alike instead of failing the test.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog.cli import build_parser
from eventlog.cli.app import COMMANDS, _parser_for
from eventlog.storage.migrate import head_revision, shipped_head

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "import sqlalchemy.ext.asyncio, asyncpg, msgspec, aiosqlite"
BUDGET = 1.3
"""The most a case may cost, as a multiple of the floor's median."""
ROUNDS = 5
LAZY = ("jsonschema", "rfc3987_syntax", "rich", "structlog", "alembic", "cryptography",
        "langgraph", "agent_framework", "asyncpg", "opentelemetry",
        "starlette", "uvicorn", "jinja2", "eventlog.cli.serve")
"""What the library and ``eventlog --help`` load only when a call needs it (the console's
web stack, the ``[serve]`` extra, only when ``eventlog serve`` runs)."""

HELP = (
    "import sys\n"
    "from eventlog.cli import main\n"
    "sys.argv = ['eventlog', *sys.argv[1:]]\n"
    "status = main()\n"
)
"""``eventlog ARGS`` as the console script runs it (``-c HELP ARGS``)."""


def _cpu_seconds(arguments: list[str]) -> float:
    """The CPU time (user + system) of one fresh child process running ``arguments``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(arguments, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _loaded(code: str, *arguments: str) -> set[str]:
    """Which of `LAZY` a fresh process has imported after running ``code``."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", probe, *arguments], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_and_help_cost_at_most_the_budget_beside_the_floor() -> None:
    """``from eventlog import open_log`` and ``eventlog --help`` each take at most 1.3 times
    the CPU of importing the core dependencies (medians of 5 interleaved fresh runs)."""
    cases = {
        "floor": [sys.executable, "-c", FLOOR],
        "from eventlog import open_log": [sys.executable, "-c", "from eventlog import open_log"],
        "eventlog --help": [sys.executable, "-c", HELP, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, arguments in cases.items():
            times[name].append(_cpu_seconds(arguments))
    floor = statistics.median(times["floor"])
    ratios = {name: round(statistics.median(times[name]) / floor, 2)
              for name in cases if name != "floor"}
    print(f"floor {floor:.3f} s CPU; ratios {ratios}")
    assert {} == {name: ratio for name, ratio in ratios.items() if ratio > BUDGET}


COMMAND_NAMES = [name for name, (_module, summary) in COMMANDS.items() if summary is not None]
"""Every command ``eventlog --help`` lists."""


@pytest.mark.examples
def test_every_commands_help_costs_at_most_the_budget_beside_the_floor() -> None:
    """``eventlog CMD --help`` takes at most 1.3 times the floor's CPU for every command
    (medians of 3 interleaved fresh runs): it builds CMD's parser from its declaration in
    `eventlog.cli.parsers`, importing neither the command's module nor the log."""
    cases = {"floor": [sys.executable, "-c", FLOOR]} | {
        name: [sys.executable, "-c", HELP, name, "--help"] for name in COMMAND_NAMES}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(3):
        for name, arguments in cases.items():
            times[name].append(_cpu_seconds(arguments))
    floor = statistics.median(times["floor"])
    ratios = {name: round(statistics.median(times[name]) / floor, 2)
              for name in cases if name != "floor"}
    print(f"floor {floor:.3f} s CPU; ratios {ratios}")
    assert {} == {name: ratio for name, ratio in ratios.items() if ratio > BUDGET}


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_a_commands_help_imports_no_command_module(command: str) -> None:
    """``eventlog CMD --help`` imports nothing optional, not the log, and no module under
    `eventlog.cli` but the app's own, the declarations' and the option types'."""
    light = {"eventlog.cli", "eventlog.cli.app", "eventlog.cli.context", "eventlog.cli.errors",
             "eventlog.cli.examples", "eventlog.cli.lenient", "eventlog.cli.options"}
    code = (f"try:\n    exec({HELP!r})\nexcept SystemExit:\n    pass\n"
            "import json, sys\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'eventlog.log' or (\n"
            "    m.startswith('eventlog.cli.') and not m.startswith('eventlog.cli.parsers')))))")
    done = subprocess.run([sys.executable, "-c", code, command, "--help"], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    assert [] == sorted(set(json.loads(done.stdout.splitlines()[-1])) - light)
    assert set() == _loaded(f"try:\n    exec({HELP!r})\nexcept SystemExit:\n    pass",
                            command, "--help")


def test_the_replay_declaration_names_the_replay_tables() -> None:
    """The views ``replay --help`` names are those the command shows."""
    from eventlog.cli import replay
    from eventlog.cli.parsers import replay as declared

    assert (replay.DEFAULT_TABLES, replay.OTHER_TABLES) == (
        declared.DEFAULT_TABLES, declared.OTHER_TABLES)


def test_importing_the_library_loads_nothing_optional() -> None:
    """``import eventlog`` and ``from eventlog import open_log`` import no schema
    validator, no rich, no structlog, no alembic, no cryptography, no framework and no
    PostgreSQL driver."""
    assert set() == _loaded("import eventlog\nfrom eventlog import open_log")


@pytest.mark.parametrize("arguments", [["--help"], ["--version"]], ids=" ".join)
def test_help_loads_nothing_optional(arguments: list[str]) -> None:
    """``eventlog --help`` (and ``--version``) imports none of them."""
    assert set() == _loaded(f"try:\n    exec({HELP!r})\nexcept SystemExit:\n    pass",
                            *arguments)


OPENS_A_LOG = ("eventlog.log", "eventlog.storage", "eventlog.face", "eventlog.opening",
               "eventlog.checkpoints", "eventlog.interrupts", "projections", "sqlalchemy",
               "aiosqlite", "asyncpg", "sqlite3")
"""What can open a database, or what only a log's reader needs (each with its submodules)."""


def _imported(code: str, packages: tuple[str, ...], *arguments: str) -> list[str]:
    """The modules of ``packages`` (each with its submodules) a fresh process has imported
    after running ``code`` with ``arguments``."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted(m for m in sys.modules if any(\n"
             f"    m == p or m.startswith(p + '.') for p in {packages!r}))))\n")
    done = subprocess.run([sys.executable, "-c", probe, *arguments], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_importing_open_log_loads_nothing_that_opens_a_log() -> None:
    """``import eventlog`` and ``from eventlog import open_log`` import neither the log, its
    storage, a driver, the stores, the projections nor SQLAlchemy: `open_log` loads them
    when it first opens a log."""
    opening = tuple(p for p in OPENS_A_LOG if p != "eventlog.opening")
    assert [] == _imported("import eventlog\nfrom eventlog import open_log", opening)


@pytest.mark.parametrize("arguments", [["--help"], ["--version"]], ids=" ".join)
def test_help_loads_nothing_that_opens_a_log(arguments: list[str]) -> None:
    """``eventlog --help`` (and ``--version``) imports nothing that opens a log, and no
    event loop (asyncio loads when a command runs)."""
    assert [] == _imported(f"try:\n    exec({HELP!r})\nexcept SystemExit:\n    pass",
                           (*OPENS_A_LOG, "asyncio"), *arguments)


STORES = ("eventlog.log", "eventlog.storage", "eventlog.face", "eventlog.checkpoints.store",
          "eventlog.checkpoints.threads", "eventlog.interrupts.store", "projections",
          "sqlalchemy", "aiosqlite", "asyncpg", "sqlite3")
"""What the stores import (the log, its storage, the projections they fold, SQLAlchemy)."""

HEAVY_NAMES = ("CheckpointStore", "EventLog", "InterruptStore", "OpenLog", "SpilledViews",
               "Subscription", "TypedCheckpointStore")
"""The public names that are the log, a store or the face: naming one loads `STORES`."""


def test_naming_a_record_or_an_option_loads_no_store() -> None:
    """Importing every public name but the log, the stores and the face (the records,
    events, errors, ``InterruptOptions``, ``Operation``...) imports nothing the stores do."""
    import eventlog

    light = ", ".join(name for name in eventlog.__all__ if name not in HEAVY_NAMES)
    assert [] == _imported(f"from eventlog import {light}", STORES)


def test_naming_a_store_loads_what_it_needs() -> None:
    """``from eventlog import CheckpointStore`` does load the log, the projections and
    SQLAlchemy (what the test above looks for is what a store brings)."""
    loaded = _imported("from eventlog import CheckpointStore", STORES)
    assert {"eventlog.log", "projections", "sqlalchemy"} <= set(loaded)


def test_a_first_checkpoint_loads_nothing_it_does_not_use(tmp_path: Path) -> None:
    """A fresh process that creates and reads a checkpoint on a SQLite log imports no
    schema validator, rich, structlog, alembic, cryptography, framework or PostgreSQL
    driver: neither when the log is new (the shipped head script makes its schema:
    eventlog/storage/headschema.py) nor when it exists (the stamp is current)."""
    code = (
        "import asyncio, uuid\n"
        "from eventlog import CheckpointRecord, open_log\n"
        "async def main():\n"
        f"    async with open_log('sqlite:///{tmp_path / 'first.db'}') as log:\n"
        "        made = await log.checkpoints.create(CheckpointRecord(\n"
        "            tenant_id='t', session_id='s', run_id=uuid.uuid4(), state={'n': 1}))\n"
        "        assert (await log.checkpoints.latest('t', 's')).checkpoint_id == \\\n"
        "            made.checkpoint_id\n"
        "asyncio.run(main())\n"
    )
    assert (set(), set()) == (_loaded(code), _loaded(code))


WEB_STACK = ("starlette", "uvicorn", "jinja2", "eventlog.cli.serve")
"""What only ``eventlog serve`` imports (the ``[serve]`` extra and the console)."""


@pytest.mark.parametrize("command", [["log"], ["timeline", "t", "s"], ["report", "t", "s",
                                     "-o", "-"], ["verify"], ["stats"]], ids=" ".join)
def test_the_other_commands_load_no_web_stack(command: list[str], tmp_path: Path) -> None:
    """A command that reads a real log (the report too, whose model the console shares)
    imports neither Starlette, uvicorn, Jinja2 nor the console."""
    url = f"sqlite:///{tmp_path / 'read.db'}"
    write = (
        "import asyncio, uuid\n"
        "from eventlog import CheckpointRecord, open_log\n"
        "async def main():\n"
        f"    async with open_log({url!r}) as log:\n"
        "        await log.checkpoints.create(CheckpointRecord(\n"
        "            tenant_id='t', session_id='s', run_id=uuid.uuid4(), state={'n': 1}))\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", write], check=True, cwd=ROOT)
    code = (f"try:\n    exec({HELP!r})\nexcept SystemExit:\n    pass\n"
            "import json, sys\n"
            f"print(json.dumps(sorted(m for m in sys.modules if any(\n"
            f"    m == p or m.startswith(p + '.') for p in {WEB_STACK!r}))))")
    done = subprocess.run([sys.executable, "-c", code, *command, "--url", url], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    assert [] == json.loads(done.stdout.splitlines()[-1])


def test_the_shipped_head_read_from_the_scripts_is_alembics() -> None:
    """The newest revision read from the scripts' text (how an up-to-date database is
    recognised without alembic) is the head alembic finds."""
    assert head_revision() == shipped_head()


def test_a_schema_loads_the_validator_when_first_checked() -> None:
    """The validator is loaded by the first schema checked, not before."""
    code = (
        "import sys\n"
        "from eventlog.interrupts.schema import check_schema, validate\n"
        "assert 'jsonschema' not in sys.modules\n"
        "assert check_schema({'format': 'email'}) is None\n"
        "assert validate('x', {'format': 'email'}) is not None\n"
    )
    assert {"jsonschema"} <= _loaded(code)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(action for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction))
    return dict(action.choices)


def _summaries(parser: argparse.ArgumentParser) -> list[tuple[str, str | None]]:
    action = next(action for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction))
    shown = {choice.dest: choice.help for choice in action._choices_actions}
    return [(name, shown.get(name)) for name in action.choices]


def test_the_command_table_is_what_the_modules_register() -> None:
    """`COMMANDS` lists every command the modules register, in their order, with the
    summary each registers (so ``eventlog --help`` lists them without importing them)."""
    assert [(name, summary) for name, (_module, summary) in COMMANDS.items()] == \
        _summaries(build_parser())


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_parsed_alone_is_the_command_parsed_with_all(command: str) -> None:
    """The parser `main` builds for one command gives that command the same help as the
    whole command line does (``eventlog CMD --help`` imports CMD's module alone)."""
    alone = _subcommands(_parser_for([command, "--help"]))[command]
    assert _subcommands(build_parser())[command].format_help() == alone.format_help()


def test_the_listing_is_the_whole_command_lines_help() -> None:
    """``eventlog --help`` without any command module reads as with all of them."""
    assert build_parser().format_help() == _parser_for(["--help"]).format_help()


@pytest.fixture(scope="module")
def audit_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A signed head of one event, an inclusion proof under it and the operator's public
    key, made with the pure proof code alone (no log)."""
    import uuid
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from eventlog import notes, proofs
    from eventlog.hashing import GENESIS_HASH, recompute_hash
    from eventlog.merkle import InclusionProof, leaf_hash
    from eventlog.signing import Ed25519PrivateKey, generate_key_pair, load_private_key

    directory = tmp_path_factory.mktemp("audit")
    private, public = generate_key_pair()
    key: Ed25519PrivateKey = load_private_key(private)
    event = SimpleNamespace(
        event_id=uuid.UUID(int=7), tenant_id="acme", stream_id="s", version=1,
        recorded_at=datetime(2030, 1, 1, tzinfo=UTC), type="noted", data=b"{}",
        prev_hash=GENESIS_HASH, actor=None, signature=None)
    event.hash = recompute_hash(event)
    origin = notes.origin_for("example.org/log", "acme")
    text = notes.sign_checkpoint(notes.Checkpoint(origin, 1, leaf_hash(event.hash)), origin, key)
    head = proofs.open_head(text, key.public_key())
    document = proofs.inclusion_document(head, event, InclusionProof(0, 1, ()))
    files = {"head": text, "proof": json.dumps(document), "op.pub.pem": public.decode()}
    for name, content in files.items():
        (directory / name).write_text(content)
    return {name: str(directory / name) for name in files} | {"dir": str(directory)}


@pytest.mark.parametrize("command", ["check-proof", "witness", "verifier-key"])
def test_the_auditors_commands_import_nothing_that_opens_a_log(
        command: str, audit_files: dict[str, str]) -> None:
    """``check-proof``, ``witness`` and ``verifier-key`` run to their answer (status 0)
    without importing the log, storage, a driver, the stores or projections (DESIGN.md:
    the proof code an auditor runs imports nothing that opens a database)."""
    key = ["--key", audit_files["op.pub.pem"]]
    arguments = {
        "check-proof": [audit_files["proof"], "--head", audit_files["head"], *key],
        "witness": ["--head", audit_files["head"], "--state",
                    str(Path(audit_files["dir"]) / "witness"), *key],
        "verifier-key": ["acme", "--name", "example.org/log", *key],
    }[command]
    code = (f"{HELP}import json\n"
            f"print(json.dumps([status, sorted(m for m in sys.modules if any(\n"
            f"    m == p or m.startswith(p + '.') for p in {OPENS_A_LOG!r}))]))")
    done = subprocess.run([sys.executable, "-c", code, command, *arguments], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    assert [0, []] == json.loads(done.stdout.splitlines()[-1])
