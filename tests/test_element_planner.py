"""The element planner does what is new and no more (issue 41), without I/O: a growing
list's put hashes its new element alone, what its last put saw is reused only while
exact, a failed write teaches nothing, and what it remembers is bounded."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from eventlog.checkpoints import elements
from eventlog.checkpoints.elements import ElementPlanner, Seen, split
from eventlog.checkpoints.thread_records import ChannelValue, Elements, Payload
from eventlog.hashing import content_digest


class Hashing:
    """An address function that counts what it hashes (one object across puts, as a
    plain log's `content_digest` is)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, data: bytes) -> bytes:
        self.calls += 1
        return content_digest(data)


def element(n: int) -> Payload:
    return Payload("b", f"element {n} ".encode() * 40)


def put(planner: ElementPlanner, payloads: list[Payload], version: int,
        address: Callable[[bytes], bytes]) -> tuple[elements.Plan, Callable[[], None]]:
    return planner.plan("t", "thread", "", {"messages": ChannelValue(
        f"v{version:04}", Elements(tuple(payloads)))}, address=address)


def test_a_growing_list_hashes_its_new_element_alone() -> None:
    """Forty puts, one element more each: each hashes that element and its manifest."""
    planner, hashing = ElementPlanner(), Hashing()
    payloads: list[Payload] = []
    per_put = []
    for step in range(40):
        payloads.append(element(step))
        before = hashing.calls
        _, commit = put(planner, payloads, step, hashing)
        commit()
        per_put.append(hashing.calls - before)
    assert [2] * 40 == per_put


def test_equal_bytes_in_new_payloads_reuse_their_digests() -> None:
    """Payloads rebuilt with equal bytes (another serializer's output, another process's
    list) are not hashed again; only the new element and the manifest are."""
    planner, hashing = ElementPlanner(), Hashing()
    _, commit = put(planner, [element(n) for n in range(10)], 0, hashing)
    commit()
    rebuilt = [Payload("b", bytes(bytearray(element(n).data))) for n in range(11)]
    before = hashing.calls
    put(planner, rebuilt, 1, hashing)
    assert 2 == hashing.calls - before


def test_a_changed_element_or_encoding_is_addressed_anew() -> None:
    """An element replaced by other bytes, or the same bytes under another encoding,
    gets its own item; the plan names exactly what a planner that saw nothing names."""
    planner = ElementPlanner()
    payloads = [element(n) for n in range(6)]
    _, commit = put(planner, payloads, 0, content_digest)
    commit()
    changed = [*payloads]
    changed[2] = Payload("b", b"changed in place")
    changed[4] = Payload("json", payloads[4].data)
    assert split(Elements(tuple(changed)))[0] == split(
        Elements(tuple(changed)), content_digest,
        planner._seen[("t", "thread", "", "messages")])[0]


def test_what_was_seen_is_reused_only_while_exact() -> None:
    """Random edits of a list (appends, replacements, removals, reorders, encodings):
    with what the last put saw, the items are always those of a cold split."""
    rng = random.Random(41)
    pool = [element(n) for n in range(30)] + [Payload("j", element(n).data) for n in range(5)]
    seen: Seen | None = None
    value = [pool[0]]
    for _ in range(300):
        edit = rng.randrange(5)
        if edit == 0 or not value:
            value = [*value, rng.choice(pool)]
        elif edit == 1:
            value[rng.randrange(len(value))] = rng.choice(pool)
        elif edit == 2:
            del value[rng.randrange(len(value))]
        elif edit == 3:
            rng.shuffle(value)
        else:
            value = [*value, Payload("b", rng.choice(pool).data + b"!")]
        given = Elements(tuple(value))
        items, start = split(given, content_digest, seen)
        assert split(given)[0] == items
        size = sum(len(payload.data) for payload in value)
        seen = elements.seen(given, tuple(items), content_digest, seen, start)
        assert size == seen.size


def test_what_another_address_saw_is_not_used() -> None:
    """Digests seen under one address function are not taken under another (a sealed
    log's addresses differ by subject)."""
    planner = ElementPlanner()
    _, commit = put(planner, [element(0)], 0, content_digest)
    commit()
    other = Hashing()
    put(planner, [element(0), element(1)], 1, other)
    assert 3 == other.calls


def test_a_failed_write_teaches_nothing() -> None:
    """A plan never committed (its append failed) leaves the channel's base and what
    was seen as the last committed put left them."""
    planner, hashing = ElementPlanner(), Hashing()
    payloads = [element(n) for n in range(5)]
    _, commit = put(planner, payloads, 0, hashing)
    commit()
    key = ("t", "thread", "", "messages")
    known, seen = planner._known[key], planner._seen[key]
    put(planner, [*payloads, element(5)], 1, hashing)  # never committed
    assert known is planner._known[key]
    assert seen is planner._seen[key]
    plan, _ = put(planner, [*payloads, element(6)], 2, hashing)
    assert "v0000" == plan.planned["messages"].base


def test_what_a_channel_remembers_is_bounded() -> None:
    """A channel remembers its last put and the one before it, not its whole history."""
    planner = ElementPlanner()
    payloads: list[Payload] = []
    for step in range(20):
        payloads.append(element(step))
        _, commit = put(planner, payloads, step, content_digest)
        commit()
    known = planner._known[("t", "thread", "", "messages")]
    assert known.before is not None
    assert known.before.before is None


def test_the_elements_held_stay_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `_SEEN_BYTES` the least recently put channels' elements are let go; the
    channel's base is still known (its next put is still a delta)."""
    monkeypatch.setattr(elements, "_SEEN_BYTES", 10_000)
    planner = ElementPlanner()
    for thread in range(10):
        _, commit = planner.plan("t", f"thread{thread}", "", {"messages": ChannelValue(
            "v1", Elements(tuple(element(n) for n in range(5))))})
        commit()
    assert planner._seen_bytes <= 10_000
    assert sum(seen.size for seen in planner._seen.values()) == planner._seen_bytes
    assert 10 == len(planner._known)
    assert len(planner._seen) < 10
    planner.forget("t", "thread9")
    assert sum(seen.size for seen in planner._seen.values()) == planner._seen_bytes
