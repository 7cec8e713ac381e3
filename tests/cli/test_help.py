"""Help with examples, "did you mean" for a mistyped command, errors as JSON."""

from __future__ import annotations

import json
import shlex

import pytest

from eventlog.cli import EXIT_OK, EXIT_USAGE, build_parser
from eventlog.cli.examples import EXAMPLES
from tests.cli.test_errors import run_bare


def test_every_command_has_examples_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help has an examples section."""
    for command in build_parser()._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
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
