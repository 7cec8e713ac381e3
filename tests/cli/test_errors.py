"""Failures are one line on standard error with the documented exit status."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from eventlog.cli import EXIT_OK, EXIT_OPERATIONAL, EXIT_USAGE, main
from tests.cli.helpers import Ran, Run, Story
from tests.conftest import PG_URL


def run_bare(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    """``eventlog ARGS`` exactly as given."""
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return Ran(status, captured.out, captured.err)


def one_line_error(ran: Ran) -> str:
    """The single error line a failed command printed (and nothing on standard output)."""
    lines = ran.err.strip().splitlines()
    assert ([], 1) == (ran.out.splitlines(), len(lines)), ran.err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_help_lists_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    """--help exits 0 and documents every exit status and the environment variables."""
    ran = run_bare(capsys, "--help")
    assert EXIT_OK == ran.status
    for expected in ("exit statuses:", "0    ok:", "1    findings:", "2    usage:",
                     "3    operational: storage", "130  interrupted:", "EVENTLOG_URL"):
        assert expected in ran.out


def test_every_command_documents_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help carries the same exit-status epilog."""
    for command in ("demo", "migrate", "log", "timeline", "inspect", "replay", "verify",
                    "export", "import", "cleanup", "stats"):
        ran = run_bare(capsys, command, "--help")
        assert (EXIT_OK, True) == (ran.status, "exit statuses:" in ran.out), command


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version names the installed distribution's version."""
    ran = run_bare(capsys, "--version")
    assert (EXIT_OK, f"eventlog {metadata.version('checkpoint-eventlog')}") == (
        ran.status, ran.out.strip())


def test_an_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own complaints exit 2."""
    assert EXIT_USAGE == run_bare(capsys, "log", "--no-such-option").status


def test_a_malformed_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown scheme: one line naming the URL, exit 2."""
    ran = run_bare(capsys, "stats", "--url", "mysql://db/x")
    assert EXIT_USAGE == ran.status
    assert "invalid log URL 'mysql://db/x'" in one_line_error(ran)


def test_a_missing_sqlite_file_is_reported_not_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Reading commands never create a database: a mistyped path is exit 3, no file."""
    path = tmp_path / "typo.db"
    ran = run_bare(capsys, "log", "--url", f"sqlite:///{path}")
    assert EXIT_OPERATIONAL == ran.status
    assert f"{path} does not exist" in one_line_error(ran)
    assert not path.exists()


def test_an_unreachable_postgresql_is_operational(capsys: pytest.CaptureFixture[str]) -> None:
    """A refused connection: one line naming the URL (password masked), exit 3."""
    ran = run_bare(capsys, "stats", "--url", "postgresql://me:secret@127.0.0.1:1/db")
    line = one_line_error(ran)
    assert EXIT_OPERATIONAL == ran.status
    assert "cannot open the log at postgresql://me:***@127.0.0.1:1/db" in line
    assert "secret" not in line


def test_a_missing_postgresql_database_is_operational(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server answers but the database does not exist: exit 3, one line."""
    ran = run_bare(capsys, "stats", "--url", PG_URL.rsplit("/", 1)[0] + "/no_such_db_x")
    assert EXIT_OPERATIONAL == ran.status
    assert "no_such_db_x" in one_line_error(ran)


def test_a_bad_as_of_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--as-of takes a position or an ISO 8601 time; anything else exits 2."""
    ran = run_bare(capsys, "replay", "--as-of", "the day before")
    assert (EXIT_USAGE, True) == (ran.status, "neither a log position" in ran.err)


def test_debug_adds_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--debug prints the traceback before the one-line error."""
    ran = run_bare(capsys, "log", "--debug", "--url", "mysql://db/x")
    assert (EXIT_USAGE, True) == (ran.status, "Traceback" in ran.err)
    assert ran.err.strip().splitlines()[-1].startswith("error: invalid log URL")


class TestUnknownNames:
    """Unknown tenants, sessions and batches are exit 2 with one line naming them."""

    def test_unknown_tenant(self, story: Story, run: Run) -> None:
        """log, stats, verify, replay, export and timeline refuse a tenant with no events."""
        for args in (("log", "--tenant", "nobody"), ("stats", "--tenant", "nobody"),
                     ("verify", "--tenant", "nobody"), ("timeline", "nobody", "s"),
                     ("replay", "--as-of", "1", "--tenant", "nobody"),
                     ("export", "--tenant", "nobody", "/nonexistent/x.jsonl")):
            ran = run(*args)
            assert EXIT_USAGE == ran.status, args
            assert "unknown tenant 'nobody'" in one_line_error(ran), args

    def test_unknown_session(self, story: Story, run: Run) -> None:
        """timeline, log and replay refuse a session the tenant never had."""
        for args in (("timeline", story.tenant, "ghost"),
                     ("log", "--tenant", story.tenant, "--session", "ghost"),
                     ("replay", "--as-of", "1", "--tenant", story.tenant, "--session", "ghost")):
            ran = run(*args)
            assert EXIT_USAGE == ran.status, args
            assert "unknown session or thread 'ghost'" in one_line_error(ran), args

    def test_a_session_of_another_tenant_is_unknown(self, story: Story, run: Run) -> None:
        """The other tenant uses the same session id for its checkpoints only: its own
        timeline exists, but the first tenant's batch never shows in it."""
        ran = run("timeline", story.other_tenant, story.session, "--json")
        assert (EXIT_OK, []) == (ran.status, ran.json()["batches"])

    def test_unknown_batch(self, story: Story, run: Run) -> None:
        """inspect refuses a batch the tenant does not have."""
        ran = run("inspect", story.tenant, "no-such-batch")
        assert EXIT_USAGE == ran.status
        assert "unknown interrupt batch 'no-such-batch'" in one_line_error(ran)

    def test_another_tenants_batch_is_unknown(self, story: Story, run: Run) -> None:
        """A batch is found only in its own tenant: the wall holds in the command too."""
        assert EXIT_OK == run("inspect", story.tenant, story.batch_id).status
        ran = run("inspect", story.other_tenant, story.batch_id)
        assert EXIT_USAGE == ran.status
        assert "unknown interrupt batch" in one_line_error(ran)


def test_eventlog_url_is_the_default_url(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --url the command uses $EVENTLOG_URL (here: a file migrate creates)."""
    path = tmp_path / "from-env.db"
    monkeypatch.setenv("EVENTLOG_URL", f"sqlite:///{path}")
    assert (EXIT_OK, True) == (run_bare(capsys, "migrate").status, path.exists())
    assert (EXIT_OK, {"tenants": []}) == (run_bare(capsys, "stats", "--json").status,
                                          run_bare(capsys, "stats", "--json").json())
