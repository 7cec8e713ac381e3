"""Argument types shared by the commands: each refuses a bad value with a clear message."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime


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


def position_or_time(text: str) -> int | datetime:
    """A log position (a whole number ≥ 1) or an ISO 8601 time."""
    if text.strip().isdigit():
        return positive_int(text)
    try:
        return timestamp(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a log position (a whole number) nor an ISO 8601 time"
        ) from None
