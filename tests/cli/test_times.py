"""Times on the command line: ISO 8601, a time of day, ``N units ago``, positions."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.cli.options import parse_time, time_moment, when_moment
from tests.cli.helpers import Run, TickingClock, seed
from tests.conftest import BackendTarget

NOW = datetime(2026, 11, 30, 21, 30, 15, tzinfo=UTC)


def test_a_time_of_day_is_today_in_utc_and_says_so() -> None:
    """14:02 at 21:30 is 14:02 today, UTC, and the moment says how it was read."""
    moment = parse_time("14:02", NOW)
    assert datetime(2026, 11, 30, 14, 2, tzinfo=UTC) == moment.value
    assert "14:02 today, UTC" in moment.describe()


def test_a_time_of_day_far_ahead_is_yesterday() -> None:
    """23:50 typed at 00:10 means last night: more than 12 hours ahead is yesterday's."""
    just_after_midnight = datetime(2026, 12, 1, 0, 10, tzinfo=UTC)
    moment = parse_time("23:50", just_after_midnight)
    assert datetime(2026, 11, 30, 23, 50, tzinfo=UTC) == moment.value
    assert "yesterday" in moment.describe()


def test_a_time_of_day_a_little_ahead_is_today() -> None:
    """23:10 at 21:30 is still today's (a simulated clock, like the demo's, runs ahead)."""
    assert datetime(2026, 11, 30, 23, 10, tzinfo=UTC) == parse_time("23:10", NOW).value


def test_seconds_and_fractions_of_a_time_of_day() -> None:
    """14:02:05.25 keeps its seconds and fraction."""
    expected = datetime(2026, 11, 30, 14, 2, 5, 250_000, tzinfo=UTC)
    assert expected == parse_time("14:02:05.25", NOW).value


@pytest.mark.parametrize(("text", "delta"), [
    ("10m ago", timedelta(minutes=10)), ("2 hours ago", timedelta(hours=2)),
    ("90s ago", timedelta(seconds=90)), ("1d ago", timedelta(days=1)),
])
def test_relative_times(text: str, delta: timedelta) -> None:
    """``N units ago`` counts back from now."""
    assert NOW - delta == parse_time(text, NOW).value


def test_iso_8601_is_taken_as_written() -> None:
    """An ISO time needs no explanation (no zone = UTC)."""
    moment = parse_time("2026-11-29T14:02", NOW)
    assert (datetime(2026, 11, 29, 14, 2, tzinfo=UTC), None) == (moment.value, moment.said)


@pytest.mark.parametrize("text", ["25:00", "yesterdays", "10 parsecs ago", "14h02",
                                  "yesterday noon", "16:12 CET"])
def test_nonsense_is_refused(text: str) -> None:
    """Neither a position nor a time: a usage error naming every accepted form."""
    with pytest.raises(argparse.ArgumentTypeError, match="time of day"):
        when_moment(text)


def test_now_is_now_and_says_so() -> None:
    """--as-of now: this moment, said with its time."""
    assert (NOW, "now, 2026-11-30T21:30:15.000000Z") == (parse_time("now", NOW).value,
                                                      parse_time("now", NOW).said)


@pytest.mark.parametrize(("text", "expected"), [
    ("today", datetime(2026, 11, 30, tzinfo=UTC)),
    ("yesterday", datetime(2026, 11, 29, tzinfo=UTC)),
    ("Yesterday 16:12", datetime(2026, 11, 29, 16, 12, tzinfo=UTC)),
    ("today 09:05:30", datetime(2026, 11, 30, 9, 5, 30, tzinfo=UTC)),
])
def test_today_and_yesterday_are_days_in_utc(text: str, expected: datetime) -> None:
    """today and yesterday start at midnight UTC (as journalctl reads them); a time of
    day after them is that time on that day."""
    assert expected == parse_time(text, NOW).value


@pytest.mark.parametrize("text", ["16:12 UTC", "16:12 utc", "16:12Z", "16:12UTC"])
def test_a_time_of_day_may_say_utc(text: str) -> None:
    """'16:12 UTC' is 16:12 today, UTC, as 16:12 is."""
    assert datetime(2026, 11, 30, 16, 12, tzinfo=UTC) == parse_time(text, NOW).value


def test_yesterday_says_how_it_was_read() -> None:
    """The moment says it was taken from midnight, in UTC."""
    assert "yesterday: from midnight, UTC" in parse_time("yesterday", NOW).describe()


def test_replay_as_of_now_is_read(run: Run) -> None:
    """`replay --as-of now` runs (exit 0) and says how it read now."""
    ran = run("replay", "--as-of", "now", "--json")
    assert (EXIT_OK, True) == (ran.status, ran.json()["as_of_read_as"].startswith("now, "))


def test_a_number_for_since_points_at_the_position_options() -> None:
    """--since 120 is not a time; the message names --from-position."""
    with pytest.raises(argparse.ArgumentTypeError, match="--from-position"):
        time_moment("120")


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_replay_as_of_a_time_of_day(target: BackendTarget, own_run: Run) -> None:
    """replay --as-of HH:MM:SS.ffffff (the latest such moment not in the future) equals
    replay --as-of that event's position, and the output says how the time was read."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    story = asyncio.run(seed(target, TickingClock(start)))
    at = story.positions["claim 1"]
    events = own_run("log", "--tenant", story.tenant, "--json").json_lines()
    recorded = datetime.fromisoformat(events[at - 1]["recorded_at"].replace("Z", "+00:00"))
    by_time = own_run("replay", "--as-of", f"{recorded:%H:%M:%S.%f}", "--json").json()
    by_position = own_run("replay", "--as-of", str(at), "--json").json()
    assert by_position["views"] == by_time["views"]
    # Run in the hour after midnight, that time of day is still ahead today: yesterday's.
    day = "today" if recorded.date() == datetime.now(UTC).date() else "yesterday"
    assert f"{day}, UTC" in by_time["as_of_read_as"]
    people = own_run("replay", "--as-of", f"{recorded:%H:%M:%S.%f}")
    assert f"{day}, UTC: the zone the log records" in people.out


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_log_since_a_relative_time(target: BackendTarget, own_run: Run) -> None:
    """--since "2h ago" shows the last hour's events; --until "2h ago" none of them."""
    start = datetime.now(UTC) - timedelta(hours=1)
    story = asyncio.run(seed(target, TickingClock(start)))
    since = own_run("log", "--tenant", story.tenant, "--since", "2h ago", "--json")
    until = own_run("log", "--tenant", story.tenant, "--until", "2h ago", "--json")
    assert (EXIT_OK, story.positions["finalized"]) == (since.status, len(since.json_lines()))
    assert (EXIT_OK, []) == (until.status, until.json_lines())
    assert "--since" in since.err


def test_a_bad_time_is_a_usage_error(run: Run) -> None:
    """log --since nonsense: exit 2."""
    assert EXIT_USAGE == run("log", "--since", "nonsense").status


@pytest.mark.parametrize(("option", "text"), [("--since", "99999999999 hours ago"),
                                              ("--until", "999999999 days ago")])
def test_a_time_before_the_year_one_is_a_usage_error(run: Run, option: str, text: str) -> None:
    """A relative time past what a date holds: exit 2 with one JSON line, no traceback."""
    ran = run("log", option, text, "--json")
    error = json.loads(ran.err.strip())
    assert (EXIT_USAGE, "usage", True) == (ran.status, error["kind"], text in error["error"])


def test_replay_as_of_before_the_year_one_is_a_usage_error(run: Run) -> None:
    """replay --as-of '999999999 days ago': exit 2 naming the time."""
    ran = run("replay", "--as-of", "999999999 days ago")
    assert (EXIT_USAGE, True) == (ran.status, "999999999 days ago" in ran.err)
