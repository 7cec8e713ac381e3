"""A listed checkpoint's state in the report: its value, pretty and folded, and what
changed since its parent."""

from __future__ import annotations

import hashlib
import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

from eventlog.checkpoints import CheckpointCreated
from eventlog.cli import EXIT_OK
from eventlog.cli.report.values import MAX_SHOWN, difference, state_views
from tests.cli.helpers import Run, Story
from tests.cli.test_report_page import RUN_1, recorded


def _state(checkpoint_id: str, parent: str | None, value: Any) -> tuple[
        tuple[str, CheckpointCreated], bytes]:
    data = json.dumps(value).encode()
    return ("session:s", CheckpointCreated(
        session_id="s", run_id=RUN_1, checkpoint_id=checkpoint_id, parent_id=parent, step=0,
        state_digest=hashlib.sha256(data).hexdigest(), state_encoding="json",
        state_size=len(data))), data


def _views(*states: tuple[tuple[str, CheckpointCreated], bytes]) -> dict[int, Any]:
    events = recorded(*(event for event, _data in states))
    blobs = {hashlib.sha256(data).digest(): data for _event, data in states}
    return state_views(events, {e.position for e in events}, blobs)


def test_a_change_a_new_key_and_a_removed_key_are_each_a_line() -> None:
    """Objects are compared key by key, with paths."""
    assert ["~ trip.to: \"OPO\" → \"LIS\"", "- trip.budget: 500", "+ trip.chosen: \"TP1234\""
            ] == difference({"trip": {"to": "OPO", "budget": 500}},
                            {"trip": {"to": "LIS", "chosen": "TP1234"}})


def test_arrays_are_compared_item_by_item() -> None:
    """An appended item is one added line at its index."""
    assert ["+ items[2]: \"done\""] == difference({"items": ["a", "b"]},
                                                 {"items": ["a", "b", "done"]})


def test_equal_states_have_no_difference() -> None:
    """Nothing changed: no line (1 and 1.0 differ in type, and are said to)."""
    assert ([], ["~ n: 1 → 1.0"]) == (difference({"n": [1, {"a": None}]},
                                                 {"n": [1, {"a": None}]}),
                                      difference({"n": 1}, {"n": 1.0}))


def test_a_state_is_pretty_printed_and_diffed_against_its_parent() -> None:
    """The child's view: its value indented, the parent's id, and the change."""
    views = _views(_state("a", None, {"step": 0}), _state("b", "a", {"step": 1}))
    assert ('{\n  "step": 1\n}', "a", ["~ step: 0 → 1"]) == (
        views[2].pretty, views[2].parent, views[2].diff)


def test_a_root_checkpoint_has_a_value_and_no_difference() -> None:
    """Without a parent there is nothing to compare with."""
    view = _views(_state("a", None, {"step": 0}))[1]
    assert ('{\n  "step": 0\n}', None, []) == (view.pretty, view.parent, view.diff)


def test_an_erased_state_says_so() -> None:
    """A state whose blob is gone (a deleted session) is not shown, and says why."""
    event, _data = _state("a", None, {"secret": 1})
    view = state_views(recorded(event), {1}, {})[1]
    assert ("", True) == (view.pretty, view.note.startswith("erased since"))


def test_a_large_state_is_cut_and_says_so() -> None:
    """A value larger than the page's share is cut, with its full length said."""
    value = {"text": "x" * 10_000}
    view = _views(_state("a", None, value))[1]
    full = len(json.dumps(value, indent=2))
    assert (MAX_SHOWN, f"cut at {MAX_SHOWN} of {full} characters") == (
        len(view.pretty), view.note)


def _row_cell(html: str, position: int) -> str:
    match = re.search(rf'<tr class="ev[^"]*" id="ev-{position}".*?</tr>', html, re.S)
    assert match is not None
    return match[0]


def test_the_report_shows_each_checkpoint_state_and_its_change(
    story: Story, run: Run, tmp_path: Path
) -> None:
    """The story's c1 row holds its state and the change from c0, folded."""
    out = tmp_path / "r.html"
    assert EXIT_OK == run("report", story.tenant, story.session, "-o", str(out)).status
    row = _row_cell(out.read_text(), story.positions["c1"])
    pre = [html_lib.unescape(text) for text in re.findall(r"<pre>(.*?)</pre>", row, re.S)]
    assert ['{\n  "step": 1\n}', '<span class="dchg">~ step: 0 → 1</span>\n'] == pre


def test_another_tenants_state_of_the_same_session_never_shows(
    story: Story, run: Run, tmp_path: Path
) -> None:
    """The other tenant's checkpoint of the same session id (state ``{"other": true}``)
    is not on the page."""
    out = tmp_path / "r.html"
    run("report", story.tenant, story.session, "-o", str(out))
    assert "other" not in html_lib.unescape(" ".join(
        re.findall(r"<pre>(.*?)</pre>", out.read_text(), re.S)))
