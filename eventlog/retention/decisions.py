"""Retention's decisions, without I/O: a policy checked, which records of a session or a
thread a policy lets go, the holds a tenant's retention stream folds to.

A record is purged only when every rule given lets it go: ``older_than`` (recorded
before the pass's time minus that much) and ``keep_latest`` (not one of the latest K of
its session, or of its namespace in a thread: the highest ids, as `prune` counts them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from eventlog.errors import InvalidInput
from eventlog.events import Event
from eventlog.events.retention import LegalHoldPlaced, LegalHoldReleased, RetentionRule
from eventlog.events.threads import CheckpointKey

OPEN_BATCH_STATES = ("pending", "claimed", "effect_started", "unresolved")
"""The interrupt batch states that keep their session or thread whole: awaiting an
answer, claimed, dispatching an effect, or with an effect whose outcome is unknown."""

MAX_DAYS = 36_600.0
"""The longest ``older_than`` accepted, in days (a hundred years)."""


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """What a pass keeps: records younger than ``older_than`` and/or the latest
    ``keep_latest`` per session and per namespace of a thread (at least one given)."""

    older_than: timedelta | None = None
    keep_latest: int | None = None

    @property
    def rule(self) -> RetentionRule:
        """The policy as the pass's events record it (days as a number)."""
        days = None if self.older_than is None else self.older_than.total_seconds() / 86400
        return RetentionRule(older_than_days=days, keep_latest=self.keep_latest)


@dataclass(frozen=True, slots=True)
class LegalHold:
    """A subject under legal hold: placed at ``placed_at`` (the event's time), why."""

    subject: str
    reason: str
    placed_at: datetime
    position: int


def check_policy(older_than: Any = None, keep_latest: Any = None) -> RetentionPolicy:
    """The policy these arguments make, else `InvalidInput` naming the argument.

    ``older_than`` is a `timedelta` or a number of days above 0; ``keep_latest`` a whole
    number ≥ 1 (keeping none is a delete: `CheckpointStore.delete`, `delete_thread`)."""
    if older_than is None and keep_latest is None:
        raise InvalidInput("policy", "give older_than, keep_latest or both")
    return RetentionPolicy(older_than=_check_age(older_than),
                           keep_latest=_check_keep(keep_latest))


def _check_age(older_than: Any) -> timedelta | None:
    if older_than is None:
        return None
    if isinstance(older_than, timedelta):
        days = older_than.total_seconds() / 86400
    elif isinstance(older_than, int | float) and not isinstance(older_than, bool):
        days = float(older_than)
    else:
        raise InvalidInput("older_than", f"must be a number of days or a timedelta, not "
                                         f"{older_than!r}"[:200])
    if not math.isfinite(days) or not 0 < days <= MAX_DAYS:
        raise InvalidInput("older_than", f"must be above 0 and at most {MAX_DAYS:.0f} days, "
                                         f"not {days!r}")
    return timedelta(days=days)


def _check_keep(keep_latest: Any) -> int | None:
    if keep_latest is None:
        return None
    if isinstance(keep_latest, bool) or not isinstance(keep_latest, int) or keep_latest < 1:
        raise InvalidInput("keep_latest", f"must be a whole number ≥ 1, not {keep_latest!r}"
                           [:200])
    return keep_latest


def cutoff_of(policy: RetentionPolicy, now: datetime) -> datetime | None:
    """Records recorded before this time are old enough to go (None: age keeps none)."""
    return None if policy.older_than is None else now - policy.older_than


def _goes(rank: int, recorded_at: datetime, policy: RetentionPolicy,
          cutoff: datetime | None) -> bool:
    """Whether a record ``rank`` places from its latest (0: the latest) may go."""
    if policy.keep_latest is not None and rank < policy.keep_latest:
        return False
    return cutoff is None or recorded_at < cutoff


def session_versions(rows: Sequence[Mapping[str, Any]], policy: RetentionPolicy,
                     cutoff: datetime | None, limit: int | None) -> list[int]:
    """The versions of a session's records (rows oldest first) the policy lets go, at
    most ``limit`` of them, oldest first. When any record stays, the latest stays (a
    clock set back can make it older than one kept)."""
    last = len(rows) - 1
    gone = [row["version"] for index, row in enumerate(rows)
            if _goes(last - index, row["recorded_at"], policy, cutoff)]
    if len(gone) < len(rows) and rows and gone and gone[-1] == rows[-1]["version"]:
        gone.pop()
    return gone if limit is None else gone[:limit]


def thread_keys(rows: Iterable[Mapping[str, Any]], policy: RetentionPolicy,
                cutoff: datetime | None, limit: int | None) -> list[CheckpointKey]:
    """The checkpoints of a thread the policy lets go: per namespace, ranked by id from
    the highest (the namespace's latest), lowest ids first, at most ``limit``. When any
    checkpoint of a namespace stays, its latest stays."""
    by_namespace: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_namespace.setdefault(row["namespace"], []).append(row)
    gone: list[CheckpointKey] = []
    for namespace, found in sorted(by_namespace.items()):
        newest = sorted(found, key=lambda row: row["checkpoint_id"], reverse=True)
        going = [row for rank, row in enumerate(newest)
                 if _goes(rank, row["recorded_at"], policy, cutoff)]
        if len(going) < len(newest) and going and going[0] is newest[0]:
            going.pop(0)
        gone += [CheckpointKey(namespace=namespace, checkpoint_id=row["checkpoint_id"])
                 for row in reversed(going)]
    return gone if limit is None else gone[:limit]


def fold_holds(events: Iterable[tuple[Event, datetime, int]]) -> dict[str, LegalHold]:
    """The holds standing after a retention stream's events (event, time, position)."""
    holds: dict[str, LegalHold] = {}
    for event, recorded_at, position in events:
        if isinstance(event, LegalHoldPlaced):
            holds.setdefault(event.subject,
                             LegalHold(event.subject, event.reason, recorded_at, position))
        elif isinstance(event, LegalHoldReleased):
            holds.pop(event.subject, None)
    return holds
