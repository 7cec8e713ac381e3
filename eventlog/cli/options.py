"""Argument types shared by the commands: each refuses a bad value with a clear message."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


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


TIME_HELP = ("an ISO 8601 time (2026-11-29T14:02Z; no zone = UTC), a time of day (14:02: "
             "today's, in UTC, the zone the log records), or a relative time (10m ago)")
_AHEAD = timedelta(hours=12)

_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]+)\s+ago$")
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
        shown = self.value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
        return f"{shown} ({self.said})" if self.said else shown


def parse_time(text: str, now: datetime) -> Moment:
    """``text`` as a time: ISO 8601 (no zone = UTC), a time of day (today in UTC, or
    yesterday when today's is more than 12 hours ahead of ``now``) or ``N units ago``;
    ValueError otherwise. (A time of day a little ahead stays today: a log written with a
    simulated clock, like the demo's, runs ahead of the wall clock.)"""
    cleaned = text.strip().lower()
    day_time = _TIME_OF_DAY.match(cleaned)
    if day_time:
        hour, minute, second, fraction = day_time.groups()
        moment = now.astimezone(UTC).replace(
            hour=int(hour), minute=int(minute), second=int(second or 0),
            microsecond=int((fraction or "0").ljust(6, "0")))
        day = "today"
        if moment - now > _AHEAD:  # 23:50 typed at 00:10 means last night
            moment, day = moment - timedelta(days=1), "yesterday"
        return Moment(moment, f"{text.strip()} {day}, UTC: the zone the log records")
    ago = _AGO.match(cleaned)
    if ago and ago.group(2) in _UNITS:
        delta = timedelta(**{_UNITS[ago.group(2)]: float(ago.group(1))})
        return Moment(now - delta, f"{text.strip()}, from {now:%H:%M:%S}Z")
    return Moment(timestamp(text))


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
