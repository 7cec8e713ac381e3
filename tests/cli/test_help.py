"""Help with examples, "did you mean" for a mistyped command, errors as JSON."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest

from eventlog.cli import EXIT_OK, EXIT_OPERATIONAL, EXIT_USAGE, build_parser
from eventlog.cli.examples import EXAMPLES
from tests.cli.test_errors import run_bare


def test_every_command_has_examples_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help has an examples section (not the hidden one that completion
    scripts call)."""
    for command in build_parser()._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
        if command.startswith("_"):
            continue
        ran = run_bare(capsys, command, "--help")
        assert (EXIT_OK, True) == (ran.status, "examples:\n  eventlog " + command in ran.out)


@pytest.mark.parametrize(("command", "line"), [
    (command, line) for command, examples in EXAMPLES.items() for line, _what in examples])
def test_every_example_parses(command: str, line: str) -> None:
    """Each example is a command line the parser accepts (the part before any &&)."""
    words = shlex.split(line.split("&&")[0])
    assert ["eventlog", command] == words[:2]
    build_parser().parse_args(words[1:])


def test_a_mistyped_command_suggests_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    """`eventlog tmeline` exits 2 saying: did you mean timeline?"""
    ran = run_bare(capsys, "tmeline", "demo", "s")
    assert EXIT_USAGE == ran.status
    assert "unknown command 'tmeline'; did you mean timeline?" in ran.err


def test_with_json_a_usage_error_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    """--json: argparse's own errors are one JSON line on standard error too."""
    ran = run_bare(capsys, "log", "--bogus", "--json")
    error = json.loads(ran.err)
    assert (EXIT_USAGE, EXIT_USAGE, "usage") == (ran.status, error["exit_status"],
                                                 error["kind"])
    assert "--bogus" in error["error"]


def test_with_json_a_command_error_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    """--json: a failing command prints its one-line error as JSON, nothing on stdout."""
    ran = run_bare(capsys, "verify", "--url", "sqlite:///no/such/dir/x.db", "--json")
    error = json.loads(ran.err)
    assert ("", "operational") == (ran.out, error["kind"])
    assert "no log at sqlite:///no/such/dir/x.db" in error["error"]


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: sub for name, sub in sub.choices.items() if not name.startswith("_")}


def _offering(option: str) -> set[str]:
    return {name for name, sub in _commands().items()
            if any(option in action.option_strings for action in sub._actions)}


def test_bare_eventlog_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """`eventlog` alone prints the help (the commands), exit 0, nothing on stderr."""
    ran = run_bare(capsys)
    assert (EXIT_OK, True, "") == (ran.status, ran.out.startswith("usage: eventlog"), ran.err)


def test_every_argument_has_help_text() -> None:
    """Each option and positional of each command (-o FILE, TENANT, …) says what it is."""
    missing = [f"{name} {action.option_strings or action.dest}"
               for name, sub in _commands().items() for action in sub._actions
               if not action.help]
    assert [] == missing


def test_read_url_is_offered_only_to_commands_that_read() -> None:
    """A hot standby is no use to the commands that write or open no log."""
    assert {"adopt", "check-proof", "cleanup", "completion", "demo", "erase", "import",
            "keys", "migrate", "prove", "tree-head", "tree-rebuild", "verifier-key",
            "witness"} == (
        set(_commands()) - _offering("--read-url"))


def test_json_is_offered_only_where_it_prints_json() -> None:
    """completion prints a shell script whatever is asked: it takes no --json (nor --url);
    check-proof, witness and verifier-key open no log: they take no --url."""
    assert ({"completion"}, {"check-proof", "completion", "verifier-key", "witness"}) == (
        set(_commands()) - _offering("--json"), set(_commands()) - _offering("--url"))


def test_a_mistyped_option_prints_its_command_s_usage_and_the_nearest(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`eventlog log --limt 5` exits 2 with `log`'s usage (not the top level's) and
    suggests --limit."""
    ran = run_bare(capsys, "log", "--limt", "5")
    assert EXIT_USAGE == ran.status
    assert ran.err.startswith("usage: eventlog log ")
    assert "unrecognized arguments: --limt 5; did you mean --limit?" in ran.err


def test_a_mistyped_option_after_positionals_names_its_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`eventlog hold acme s1 --reasn audit`: `hold`'s usage, and --reason suggested."""
    ran = run_bare(capsys, "hold", "acme", "s1", "--reasn", "audit")
    assert EXIT_USAGE == ran.status
    assert ran.err.startswith("usage: eventlog hold ")
    assert "did you mean --reason?" in ran.err


def test_an_option_nothing_resembles_gets_no_suggestion(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option with no near one is refused without a guess."""
    ran = run_bare(capsys, "log", "--zzzzzz")
    assert (EXIT_USAGE, True, False) == (
        ran.status, ran.err.startswith("usage: eventlog log "), "did you mean" in ran.err)


@pytest.mark.parametrize("command", ["demo", "migrate", "verify", "log", "stats"])
def test_a_missing_directory_is_refused_by_writers_and_readers_alike(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    """`demo --url sqlite:///no/such/dir/x.db` made the directories silently while the
    reading commands refused the path: every command now refuses a log whose directory
    does not exist (a writer creates the database file, never the directories above it),
    and nothing is created."""
    missing = tmp_path / "no" / "such" / "dir"
    ran = run_bare(capsys, command, "--url", f"sqlite:///{missing / 'x.db'}")
    assert EXIT_OPERATIONAL == ran.status
    assert f"{missing} does not exist" in ran.err
    assert not (tmp_path / "no").exists()
