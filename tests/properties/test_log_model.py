"""Hypothesis: random appends against each backend agree with a small pure model.

The model is a dict of streams (lists of event texts), blob reference counts, and the
references each stream's events hold (the only ones an append to it may release). Each
example works in fresh tenants, so examples share one open store without resetting it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from eventlog import (
    ANY,
    NO_STREAM,
    AppendResult,
    EventLog,
    ExpectedVersion,
    ReleaseNotHeld,
    VersionConflict,
    open_log,
)
from eventlog.hashing import content_digest, uncounted
from tests.conftest import BackendTarget
from tests.events import Holding, Noted

# Model-based runs: 200 examples each under CI=true, minutes in all (pytest -m properties).
pytestmark = pytest.mark.properties

T = TypeVar("T")

STREAMS = ("s0", "s1", "s2")
TENANTS = ("a", "b")
PAYLOADS = (b"p0", b"p1")

expectations = st.one_of(
    st.just(ANY), st.just(NO_STREAM), st.just("head"), st.integers(min_value=0, max_value=6)
)


@dataclass
class Model:
    """What the log should hold: each stream's texts and each blob's reference count."""

    streams: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    refs: dict[tuple[str, bytes], int] = field(default_factory=dict)
    held: dict[tuple[str, str], Counter[bytes]] = field(default_factory=dict)

    def version(self, key: tuple[str, str]) -> int:
        return len(self.streams.get(key, []))

    def conflict(self, key: tuple[str, str], expected: int | ExpectedVersion) -> bool:
        """Whether an append with ``expected`` must be refused."""
        if expected is ExpectedVersion.ANY:
            return False
        wanted = 0 if expected is ExpectedVersion.NO_STREAM else expected
        return wanted != self.version(key)

    def unheld(self, key: tuple[str, str], attach: bytes | None, release: bytes | None) -> bool:
        """Whether the append releases a reference its stream's events do not hold."""
        held = self.held.get(key, Counter())[release] if release is not None else 0
        return release is not None and held + (attach == release) < 1

    def append(self, key: tuple[str, str], texts: list[str], attach: bytes | None,
               release: bytes | None) -> None:
        self.streams.setdefault(key, []).extend(texts)
        held = self.held.setdefault(key, Counter())
        # A payload of at most TOLD_BY_DIGEST bytes is stored at 0, never counted nor
        # purged; the stream's events still hold it.
        if attach is not None:
            self.refs[(key[0], attach)] = (
                0 if uncounted(attach) else self.refs.get((key[0], attach), 0) + 1)
            held[attach] += 1
        if release is not None:
            held[release] -= 1
            if uncounted(release):
                return
            remaining = self.refs.get((key[0], release), 0) - 1
            if remaining > 0:
                self.refs[(key[0], release)] = remaining
            else:
                self.refs.pop((key[0], release), None)


class LogMachine(RuleBasedStateMachine):
    """Appends with ANY / NO_STREAM / exact versions, checked against `Model`."""

    runner: asyncio.Runner
    log: EventLog

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.prefix = uuid.uuid4().hex[:10]
        self.last_position = 0
        self.counter = 0

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coroutine)

    def tenant(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    @initialize()
    def start(self) -> None:
        self.counter = 0

    @rule(
        tenant=st.sampled_from(TENANTS),
        stream=st.sampled_from(STREAMS),
        count=st.integers(min_value=1, max_value=3),
        expected=expectations,
        attach=st.none() | st.sampled_from(PAYLOADS),
        release=st.none() | st.sampled_from(PAYLOADS),
    )
    def append(self, tenant: str, stream: str, count: int, expected: Any,
               attach: bytes | None, release: bytes | None) -> None:
        key = (self.tenant(tenant), stream)
        if expected == "head":
            expected = self.model.version(key)
        texts = [f"e{self.counter + n}" for n in range(count)]
        self.counter += count
        outcome = self.run(_append(
            self.log, key, texts, expected, attach, release
        ))
        if isinstance(outcome, VersionConflict):
            shown = "no stream" if expected in (NO_STREAM, 0) else expected
            assert (True, stream, shown, self.model.version(key)) == (
                self.model.conflict(key, expected), outcome.stream_id, outcome.expected,
                outcome.actual,
            )
            return
        if isinstance(outcome, ReleaseNotHeld):
            assert (False, True, stream) == (self.model.conflict(key, expected),
                                             self.model.unheld(key, attach, release),
                                             outcome.stream_id)
            return
        result = outcome
        assert (False, False) == (self.model.conflict(key, expected),
                                  self.model.unheld(key, attach, release))
        self.model.append(key, texts, attach, release)
        assert self.model.version(key) == result.version
        assert self.last_position < result.positions[0]
        assert sorted(result.positions) == list(result.positions)
        self.last_position = result.positions[-1]

    @precondition(lambda self: bool(self.model.streams))
    @rule(data=st.data())
    def read_back(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.model.streams)))
        read = self.run(_read_stream(self.log, *key))
        assert [(n, text) for n, text in enumerate(self.model.streams[key], 1)] == read

    def teardown(self) -> None:
        for tenant in TENANTS:
            refs = self.run(self.log.storage.blob_refs(self.tenant(tenant)))
            expected = {content_digest(payload): n for (t, payload), n in
                        self.model.refs.items() if t == self.tenant(tenant)}
            assert expected == dict(refs)
        for key, texts in self.model.streams.items():
            assert [(n, text) for n, text in enumerate(texts, 1)] == self.run(
                _read_stream(self.log, *key)
            )


async def _append(
    log: EventLog, key: tuple[str, str], texts: list[str], expected: Any,
    attach: bytes | None, release: bytes | None,
) -> AppendResult | VersionConflict | ReleaseNotHeld:
    # The first event names the attached blob (so the stream holds it) and the release.
    events = [Holding(text=texts[0], blobs=[content_digest(attach).hex()] if attach else [],
                      released={content_digest(release).hex(): 1} if release else {}),
              *(Noted(text=text) for text in texts[1:])]
    try:
        return await log.append(
            key[0], key[1], events, expected_version=expected,
            attach=[attach] if attach else [],
            release={content_digest(release): 1} if release else None,
        )
    except (VersionConflict, ReleaseNotHeld) as refused:
        return refused


async def _read_stream(log: EventLog, tenant: str, stream: str) -> list[tuple[int, str]]:
    return [(event.version, event.event.text) async for event in log.read_stream(tenant, stream)]  # type: ignore[attr-defined]


def test_random_appends_match_the_model(target: BackendTarget) -> None:
    """Versions, conflicts, read-back and blob counts agree with the pure model, and every
    chain the examples wrote verifies."""
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        log = runner.run(stack.enter_async_context(open_log(target.url, **target.options())))
        try:
            machine = type("Machine", (LogMachine,), {"runner": runner, "log": log})
            run_state_machine_as_test(
                machine, settings=settings(settings(), stateful_step_count=8)
            )
            report = runner.run(log.verify())  # once for every example's streams
            assert [] == report.problems
        finally:
            runner.run(stack.aclose())
