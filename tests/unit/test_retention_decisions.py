"""Retention's decisions without a database: the rules, the latest kept, holds folded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from eventlog import InvalidInput
from eventlog.events.retention import LegalHoldPlaced, LegalHoldReleased
from eventlog.events.threads import CheckpointKey
from eventlog.retention.decisions import (
    RetentionPolicy,
    check_policy,
    fold_holds,
    session_versions,
    thread_keys,
)

NOW = datetime(2030, 6, 1, tzinfo=UTC)


def _rows(*days_ago: float) -> list[dict[str, object]]:
    return [{"version": n + 1, "recorded_at": NOW - timedelta(days=d)}
            for n, d in enumerate(days_ago)]


def test_a_clock_set_back_never_purges_the_latest_of_a_kept_session() -> None:
    """The latest record is older than one kept (the clock went back): it stays."""
    policy = check_policy(older_than=5)
    assert [1] == session_versions(_rows(10, 1, 9), policy, NOW - timedelta(days=5), None)


def test_limit_takes_the_oldest_first() -> None:
    """A capped plan purges the oldest records and never the latest."""
    policy = check_policy(keep_latest=1)
    assert [1, 2] == session_versions(_rows(5, 4, 3, 2), policy, None, 2)


def test_a_thread_namespace_keeps_its_highest_id() -> None:
    """Per namespace, by id from the highest; a namespace emptied by age goes whole."""
    rows = [{"namespace": ns, "checkpoint_id": cid, "recorded_at": NOW - timedelta(days=d)}
            for ns, cid, d in (("", "b", 9), ("", "a", 1), ("sub", "x", 9), ("sub", "y", 9))]
    policy = RetentionPolicy(older_than=timedelta(days=5))
    assert [CheckpointKey(namespace="sub", checkpoint_id="x"),
            CheckpointKey(namespace="sub", checkpoint_id="y")] == thread_keys(
        rows, policy, NOW - timedelta(days=5), None)


def test_holds_fold_to_the_standing_ones() -> None:
    """Placed, placed again (the first stands), released, placed: what stands, and since when."""
    events = [(LegalHoldPlaced(subject="a", reason="one"), NOW, 1),
              (LegalHoldPlaced(subject="a", reason="two"), NOW, 2),
              (LegalHoldPlaced(subject="b"), NOW, 3),
              (LegalHoldReleased(subject="b"), NOW, 4)]
    holds = fold_holds(events)
    assert (["a"], "one", 1) == (list(holds), holds["a"].reason, holds["a"].position)


def test_a_timedelta_and_days_are_the_same_policy() -> None:
    """older_than as days or as a timedelta; the recorded rule is in days."""
    assert (check_policy(older_than=1.5), 1.5) == (
        check_policy(older_than=timedelta(hours=36)),
        check_policy(older_than=1.5).rule.older_than_days)


@pytest.mark.parametrize("older_than", [0, float("nan"), float("inf"), 40_000, True])
def test_older_than_out_of_range_is_refused(older_than: object) -> None:
    """Zero, NaN, infinity, past a hundred years, or a bool: InvalidInput naming it."""
    with pytest.raises(InvalidInput) as raised:
        check_policy(older_than=older_than)
    assert "older_than" == raised.value.field
