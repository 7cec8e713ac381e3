"""Argument types shared by the commands: each refuses a bad value with a clear message."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""How every command writes a time, for people and in JSON: RFC 3339, UTC, ``Z``, to the
microsecond the log records (``2030-01-01T12:00:01.000000Z``): one width in every column,
and a time copied from any output is taken back by ``--since``/``--until``/``--as-of`` as
exactly what was shown."""

DEFAULT_TIMEOUT_S = 30.0
"""How long a command waits for PostgreSQL's read horizon (`eventlog.cli.horizon`)."""


def utc_text(moment: datetime) -> str:
    """An aware time as every command writes it (`TIME_FORMAT`)."""
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def positive_int(text: str) -> int:
    """A whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def non_negative_float(text: str) -> float:
    """A number of seconds ≥ 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be zero or more")
    return value


def timestamp(text: str) -> datetime:
    """An ISO 8601 time (``2026-11-29T14:02``, ``…Z``, ``…+01:00``); without a zone, UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time, e.g. 2026-11-29T14:02:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


TIME_HELP = ("an ISO 8601 time (2026-11-29T14:02Z; no zone = UTC), a time of day (14:02 or "
             "'14:02 UTC': today's, in UTC, the zone the log records; 'yesterday 14:02'), "
             "now, today or yesterday (from midnight, UTC), or a relative time (10m ago)")
_AHEAD = timedelta(hours=12)

_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]+)\s+ago$")
_DAY = re.compile(r"^(today|yesterday)(?:\s+(.+))?$")
_UTC = re.compile(r"\s*(?:z|utc)$")  # a time of day said in UTC, as the log records it
_ZONE = "UTC: the zone the log records"
_UNITS = {
    "s": "seconds", "sec": "seconds", "secs": "seconds", "second": "seconds",
    "seconds": "seconds", "m": "minutes", "min": "minutes", "mins": "minutes",
    "minute": "minutes", "minutes": "minutes", "h": "hours", "hr": "hours", "hrs": "hours",
    "hour": "hours", "hours": "hours", "d": "days", "day": "days", "days": "days",
    "w": "weeks", "week": "weeks", "weeks": "weeks",
}


@dataclass(frozen=True)
class Moment:
    """A moment given on the command line: a log position or a time (UTC), and how to say
    what a shorthand was taken to mean (None when the text said it all)."""

    value: int | datetime
    said: str | None = None

    def describe(self) -> str:
        """The moment for people: ``position 8``, or the time and what it was read as."""
        if isinstance(self.value, int):
            return f"position {self.value}"
        shown = utc_text(self.value)
        return f"{shown} ({self.said})" if self.said else shown


def parse_time(text: str, now: datetime) -> Moment:
    """``text`` as a time: ISO 8601 (no zone = UTC), a time of day (today in UTC, or
    yesterday when today's is more than 12 hours ahead of ``now``; ``UTC`` or ``Z`` may
    follow it), ``today``/``yesterday`` (from midnight UTC, or at a time of day after
    them), ``now`` or ``N units ago``; ValueError otherwise. (A time of day a little
    ahead stays today: a log written with a simulated clock, like the demo's, runs ahead
    of the wall clock.)"""
    said = text.strip()
    cleaned = said.lower()
    if cleaned == "now":
        return Moment(now, f"now, {utc_text(now)}")
    day = _DAY.match(cleaned)
    if day:
        return _on_day(day.group(1), day.group(2), said, now)
    day_time = _time_of_day(cleaned, now)
    if day_time is not None:
        moment, which = day_time, "today"
        if moment - now > _AHEAD:  # 23:50 typed at 00:10 means last night
            moment, which = moment - timedelta(days=1), "yesterday"
        return Moment(moment, f"{said} {which}, {_ZONE}")
    ago = _AGO.match(cleaned)
    if ago and ago.group(2) in _UNITS:
        try:
            moment = now - timedelta(**{_UNITS[ago.group(2)]: float(ago.group(1))})
        except OverflowError:
            raise ValueError(f"{said!r}: that is before the year 1") from None
        return Moment(moment, f"{said}, from {utc_text(now)}")
    return Moment(timestamp(text))


def _time_of_day(text: str, now: datetime) -> datetime | None:
    """``14:02``, ``14:02:05.25``, ``14:02 UTC`` on ``now``'s day (UTC), else None."""
    found = _TIME_OF_DAY.match(_UTC.sub("", text))
    if found is None:
        return None
    hour, minute, second, fraction = found.groups()
    try:
        return now.astimezone(UTC).replace(
            hour=int(hour), minute=int(minute), second=int(second or 0),
            microsecond=int((fraction or "0").ljust(6, "0")))
    except ValueError:
        raise ValueError(f"{text!r} is not a time of day") from None


def _on_day(which: str, at: str | None, said: str, now: datetime) -> Moment:
    """``today``/``yesterday``: its midnight (UTC), or the time of day ``at`` on it."""
    back = timedelta(days=1 if which == "yesterday" else 0)
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if at is None:
        return Moment(midnight - back, f"{said}: from midnight, {_ZONE}")
    moment = _time_of_day(at, now)
    if moment is None:
        raise ValueError(f"{at!r} is not a time of day")
    return Moment(moment - back, f"{said}, {_ZONE}")


def time_moment(text: str) -> Moment:
    """A time for ``--since``/``--until``: see `parse_time` (positions have their own
    options)."""
    if text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a number, not a time (for positions use --from-position and "
            "--to-position)")
    try:
        return parse_time(text, datetime.now(UTC))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {TIME_HELP}") from None


def when_moment(text: str) -> Moment:
    """A log position (a whole number ≥ 1) or a time (see `parse_time`)."""
    if text.strip().isdigit():
        return Moment(positive_int(text))
    try:
        return parse_time(text, datetime.now(UTC))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a log position (a whole number) nor {TIME_HELP}"
        ) from None
