"""One way to write a time in every command's output, for people and for programs alike:
RFC 3339 in UTC with ``Z``, to the microsecond the log records (``2030-01-01T12:00:01.000000Z``),
so a time copied from any line or JSON field is taken back by ``--since``, ``--until`` and
``--as-of`` as exactly what was shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eventlog.cli import EXIT_OK
from eventlog.cli.render import iso, when
from tests.cli.helpers import Run, Story

ONE_FORMAT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
# Anything that looks like a date with a time after it, in whatever form, or a bare time
# of day (12:05:00) standing for a moment.
TIME_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}[\d:.]*(?:Z|[+-]\d{2}:\d{2}| ?UTC)?"
                       r"|(?<![\dT:.])\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?(?![\d:])")


def _others(text: str) -> list[str]:
    """The times in ``text`` written any other way."""
    return [found for found in TIME_LIKE.findall(text) if not ONE_FORMAT.fullmatch(found)]


def _lines(story: Story) -> list[list[str]]:
    tenant, session, batch = story.tenant, story.session, story.batch_id
    as_of = str(story.positions["claim 1"])
    return [
        ["log", "--tenant", tenant], ["log", "--tenant", tenant, "--json"],
        ["log", "--tenant", tenant, "--full"],
        ["timeline", tenant, session], ["timeline", tenant, session, "--json"],
        ["inspect", tenant, batch], ["inspect", tenant, batch, "--json"],
        ["replay", "--as-of", as_of, "--tenant", tenant, "--session", session],
        ["replay", "--as-of", as_of, "--tenant", tenant, "--session", session, "--json"],
        ["stats", "--tenant", tenant], ["stats", "--tenant", tenant, "--json"],
        ["verify"], ["verify", "--json"],
    ]


def test_every_command_writes_times_one_way(run: Run, story: Story) -> None:
    """log, timeline, inspect, replay, stats and verify (for people and --json) show every
    time as RFC 3339 UTC with Z to the microsecond, and show times at all."""
    shown = {}
    for words in _lines(story):
        ran = run(*words)
        assert EXIT_OK == ran.status, (words, ran.err)
        shown[" ".join(words[:1] + words[-1:])] = ran.out + ran.err
    assert {} == {line: others for line, text in shown.items() if (others := _others(text))}
    assert all(ONE_FORMAT.search(shown[key]) for key in ("log --json", "timeline --json",
                                                         "inspect --json"))


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_digest_hold_and_export_headers_write_times_one_way(
        own_run: Run, own_story: Story, tmp_path: Path) -> None:
    """The times verify --digest, hold --list and the export's header line show."""
    digest = tmp_path / "d.json"
    assert EXIT_OK == own_run("digest", "-o", str(digest)).status
    assert EXIT_OK == own_run("hold", own_story.tenant, own_story.session,
                              "--reason", "audit").status
    ran = [own_run("verify", "--digest", str(digest)),
           own_run("verify", "--digest", str(digest), "--json"),
           own_run("hold", "--list", own_story.tenant),
           own_run("hold", "--list", own_story.tenant, "--json")]
    assert [EXIT_OK] * 4 == [each.status for each in ran]
    assert [] == [other for each in ran for other in _others(each.out + each.err)]
    assert all(ONE_FORMAT.search(each.out) for each in ran)


@pytest.mark.parametrize("microsecond", [0, 1, 999_999])
def test_iso_and_when_are_one_format(microsecond: int) -> None:
    """The two helpers every command writes times with give the same text."""
    from datetime import UTC, datetime, timedelta, timezone

    moment = datetime(2030, 1, 1, 12, 0, 1, microsecond, tzinfo=timezone(timedelta(hours=2)))
    assert ONE_FORMAT.fullmatch(iso(moment))
    assert iso(moment) == when(moment)
    assert moment == datetime.fromisoformat(iso(moment)).astimezone(UTC)
