"""``eventlog replay --as-of``: the views a hand fold of the log's prefix gives."""

from __future__ import annotations

import asyncio
from typing import Any

from eventlog import open_log
from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.cli.render import jsonable, redact
from eventlog.records import RecordedEvent
from projections import INLINE_PROJECTIONS, fold_events
from projections.views import metadata
from tests.cli.helpers import Run, Story
from tests.conftest import BackendTarget
from tests.procs.settle import settle

ALL_VIEWS = sorted(metadata.tables)
Seeded = tuple[BackendTarget, Story]


async def whole_log(target: BackendTarget) -> list[RecordedEvent]:
    """Every event, in log order."""
    async with open_log(target.url, upgrade=False, **target.options()) as log:
        await settle(log)
        events: list[RecordedEvent] = []
        cursor: str | None = None
        while True:
            page = await log.read_all(after=cursor, limit=1000)
            if not page.events:
                return events
            events.extend(page.events)
            cursor = page.cursor


def by_hand(events: list[RecordedEvent]) -> dict[str, list[Any]]:
    """The views a fold of ``events`` gives, as the command prints them in JSON."""
    snapshot = fold_events(INLINE_PROJECTIONS, events).snapshot()
    return {name: jsonable([redact(row) for row in snapshot[name]]) for name in ALL_VIEWS}


def replayed(run: Run, *args: str) -> dict[str, Any]:
    """The JSON ``replay`` printed for every view."""
    tables = [option for name in ALL_VIEWS for option in ("--table", name)]
    ran = run("replay", "--json", *tables, *args)
    assert EXIT_OK == ran.status, ran.err
    result: dict[str, Any] = ran.json()
    return result


def test_as_of_a_position_equals_the_folded_prefix(
    seeded: Seeded, story: Story, run: Run
) -> None:
    """--as-of P shows exactly the views of the events at positions ≤ P, here while the
    first claim was live."""
    events = asyncio.run(whole_log(seeded[0]))
    at = story.positions["claim 1"]
    result = replayed(run, "--as-of", str(at))
    assert by_hand([e for e in events if e.position <= at]) == result["views"]
    assert at == result["last_position"]
    batch = result["views"]["interrupt_batches"][0]
    assert ("claimed", 1, "(redacted)") == (batch["state"], batch["generation"],
                                            batch["token_digest"])


def test_as_of_a_time_equals_the_folded_prefix(
    seeded: Seeded, story: Story, run: Run
) -> None:
    """--as-of TIME shows the views of the events recorded at or before TIME."""
    events = asyncio.run(whole_log(seeded[0]))
    moment = events[len(events) // 2].recorded_at
    result = replayed(run, "--as-of", moment.isoformat())
    assert by_hand([e for e in events if e.recorded_at <= moment]) == result["views"]


def test_as_of_the_end_equals_the_stored_views(
    seeded: Seeded, story: Story, run: Run
) -> None:
    """As of the last position, the replay is the whole log's fold."""
    events = asyncio.run(whole_log(seeded[0]))
    result = replayed(run, "--as-of", str(events[-1].position))
    assert by_hand(events) == result["views"]


def test_before_anything_the_views_are_empty(story: Story, run: Run) -> None:
    """A time before the first event: every view empty, no last position."""
    result = replayed(run, "--as-of", "2000-01-01T00:00Z")
    assert (None, {name: [] for name in ALL_VIEWS}) == (result["last_position"],
                                                        result["views"])


def test_session_filter_shows_only_that_session(story: Story, run: Run) -> None:
    """--tenant/--session keep only that session's rows (batch rows by their thread)."""
    result = replayed(run, "--as-of", str(story.positions["finalized"]),
                      "--tenant", story.tenant, "--session", story.session)
    views = result["views"]
    assert 5 == len(views["checkpoints"])
    assert [(story.tenant, story.session, "finalized")] == [
        (row["tenant_id"], row["thread_id"], row["state"]) for row in views["interrupt_batches"]]
    assert [] == views["stream_heads"]


def test_people_get_tables(story: Story, run: Run) -> None:
    """Without --json: a headline naming the last event, then one table per view."""
    ran = run("replay", "--as-of", str(story.positions["c2"]), "--tenant", story.tenant)
    assert EXIT_OK == ran.status
    assert f"the views after event #{story.positions['c2']}" in ran.out
    assert "checkpoints (3 rows)" in ran.out


def test_an_unknown_view_is_a_usage_error(run: Run) -> None:
    """--table must name a view."""
    ran = run("replay", "--as-of", "1", "--table", "nope")
    assert (EXIT_USAGE, True) == (ran.status, "unknown view 'nope'" in ran.err)
