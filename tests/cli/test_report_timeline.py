"""The report's timeline across time: pauses drawn as the gaps they were, runs that stopped
without finishing, and which clock the events carry (no database, no browser)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import msgspec

from eventlog.cli.report.model import build_session_report
from eventlog.cli.report.page import ReportData, VerifySummary, clock_note
from eventlog.cli.report.svg import duration, layout, swimlanes
from eventlog.records import RecordedEvent
from tests.cli.helpers import START
from tests.cli.test_report_page import RUN_1, RUN_2, checkpoint, page, recorded, story


def at_seconds(events: list[RecordedEvent], *seconds: float) -> list[RecordedEvent]:
    """The events recorded at START plus each of ``seconds``."""
    return [msgspec.structs.replace(event, recorded_at=START + timedelta(seconds=s))
            for event, s in zip(events, seconds, strict=True)]


def stalled() -> list[RecordedEvent]:
    """Four checkpoints a second apart, a five-minute stall, then two more."""
    events = recorded(checkpoint(RUN_1, "a", 0), *(
        checkpoint(RUN_1, f"c{i}", i, "a" if i == 1 else f"c{i - 1}") for i in range(1, 6)))
    return at_seconds(events, 0, 1, 2, 3, 303, 304)


def test_a_stall_takes_the_room_of_its_time() -> None:
    """Five minutes between two events take over 30 times the room of a one-second step."""
    shape = layout(build_session_report("t", "s", stalled()))
    steps = [round(shape.x(i + 1) - shape.x(i), 6) for i in range(5)]
    assert (True, True) == (steps[3] > 30 * steps[0], steps[0] == steps[1] == steps[4])


def test_a_stall_is_shaded_and_labelled_with_its_length() -> None:
    """The pause between #4 and #5 is drawn with its length; one-second steps are not."""
    svg = swimlanes(build_session_report("t", "s", stalled()))
    assert ["5 min pause"] == re.findall(r'<g class="pause"[^>]*>.*?<text[^>]*>([^<]+)'
                                             r"</text></g>", svg)


def test_events_in_one_instant_still_get_a_step_each() -> None:
    """Appends recorded in the same millisecond are drawn apart, in log order."""
    events = at_seconds(recorded(*(checkpoint(RUN_1, f"c{i}", i) for i in range(4))),
                        0, 0, 0, 0)
    shape = layout(build_session_report("t", "s", events))
    xs = [shape.x(i) for i in range(4)]
    assert sorted(set(xs)) == xs


def test_a_writer_clock_going_back_adds_no_time() -> None:
    """An event recorded earlier than the one before it sits right after it."""
    events = at_seconds(recorded(*(checkpoint(RUN_1, f"c{i}", i) for i in range(3))),
                        100, 0, 100)
    assert [0.0, 0.0, 0.0] == [m.at for m in build_session_report("t", "s", events).marks]


def test_durations_read_as_people_say_them() -> None:
    """Seconds, minutes, hours and days, the two largest units."""
    assert ["0 s", "45 s", "5 min 30 s", "2 h 5 min", "3 d 4 h"] == [
        duration(s) for s in (0.2, 45, 330, 7500, 3 * 86_400 + 4 * 3600 + 59)]


def test_a_run_redone_by_a_later_run_is_marked_stopped() -> None:
    """Run 1's worker crashed after step 2: run 2 replayed its steps; run 1 stops at #3."""
    report = build_session_report("t", "s", story())
    assert [("run 1", 3)] == [(stop.lane, report.marks[stop.index].position)
                              for stop in report.stops]


def test_a_run_resumed_from_its_last_checkpoint_did_not_stop() -> None:
    """A run continued from where the last one ended (an interrupt answered) is no crash."""
    events = recorded(checkpoint(RUN_1, "a", 0), checkpoint(RUN_1, "b", 1, "a"),
                      checkpoint(RUN_2, "c", 2, "b"))
    assert [] == build_session_report("t", "s", events).stops


def test_a_stopped_run_is_drawn_and_counted() -> None:
    """The stop is a mark on run 1's lane with the reason, and a fact of the session."""
    html = page(story())
    assert (["run 1"], True) == (re.findall(r'<g class="stop" data-run="([^"]+)">', html),
                                 "<b>1</b> stopped without finishing" in html)


def _clock_note(generated_at: datetime) -> str:
    report = build_session_report("t", "s", story())
    return clock_note(ReportData(
        title="r", source="memory://", generated_at=generated_at, sessions=[report],
        verify=VerifySummary(streams=2, events=11, problems=[], view_differences=[])))


def test_the_page_says_which_clock_the_events_carry() -> None:
    """Written after the events: the note names the writer's clock and warns of nothing."""
    note = _clock_note(START + timedelta(days=1))
    assert (True, False) == ("the clock of the process that wrote it" in note,
                             "ahead" in note)


def test_a_writer_clock_ahead_of_the_page_is_called_out() -> None:
    """Events recorded after the page was written (a simulated clock): said, with the
    latest event's time."""
    note = _clock_note(START)
    assert "Here they run ahead of it (the latest is 2030-01-01T12:00:11.000000Z)" in note


def test_ticks_within_a_minute_read_to_the_millisecond() -> None:
    """Appends a few milliseconds apart get ticks that tell them apart."""
    events = recorded(*(checkpoint(RUN_1, f"c{i}", i) for i in range(3)))
    events = [msgspec.structs.replace(e, recorded_at=START + timedelta(milliseconds=5 * i))
              for i, e in enumerate(events)]
    svg = swimlanes(build_session_report("t", "s", events))
    assert ["12:00:00.000"] == re.findall(r'class="tick-time">([^<]+)<', svg)[:1]


def test_ticks_across_days_carry_the_date() -> None:
    """A session resumed two days later: its ticks name the day."""
    events = at_seconds(recorded(*(checkpoint(RUN_1, f"c{i}", i) for i in range(2))),
                        0, 2 * 86_400)
    svg = swimlanes(build_session_report("t", "s", events))
    assert ["01-01 12:00", "01-03 12:00"] == re.findall(r'class="tick-time">([^<]+)<', svg)


def test_a_superseded_claims_lease_is_drawn_where_it_ran_out() -> None:
    """The story's first claim (lease 5 minutes after START, stale) is marked on the
    batch's lane at that moment, between the events around it."""
    events = at_seconds(story(), *range(0, 7), 10, 20, 400, 401)
    report = build_session_report("t", "s", events)
    shape = layout(report)
    [deadline] = report.deadlines
    x = shape.x_at(deadline.at, report.marks)
    assert ("batch 1", 300.0, True) == (deadline.lane, deadline.at,
                                        shape.x(8) < x < shape.x(9))
