"""The whole leaf recipe an auditor reads in the guide (docs/transparency.md): envelope
bytes → event hash → RFC 9162 leaf, pinned by a test vector that `eventlog.hashing` and the
guide's recipe (written out in `tests.transparency.spec`, which imports none of our code)
both give; and an export plus its header suffices to compute every leaf and the root a
signed head signs."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.hashing import GENESIS_HASH, event_hash
from eventlog.testing.events import Noted
from eventlog.transfer import export_log
from tests.guide import guide_text
from tests.transparency import spec

LINE = {"kind": "event", "stream": "session:trip-1", "version": 1,
        "id": "01a24c2e-e356-740d-a5db-5cde4d039c0e", "type": "checkpoint_created",
        "recorded_at": 1893499200123456, "data": "eyJzZXNzaW9uX2lkIjoidHJpcC0xIn0=",
        "prev_hash": "00" * 32}
"""The guide's vector: an export's event line, in an export of tenant ``acme``."""
EVENT_HASH = "49889dd8312e6702e17dd1cc81e634c56df5948ca19ba264d5eb0271bba157c2"
LEAF = "f9b4c440af450890d7c0490690c8a39abd3186f835143176f48d26c4f682e491"
WITH_ACTOR = "a13db4d8bee76c8d4b04844df1ccd6e249315f8e4ada0396bc857a6be8b664c1"
"""The next event: version 2, id 01a24c2e-e357-7000-8000-000000000002, data ``{}``, the
vector's hash as its prev_hash, actor ``alice``."""


def test_the_vector_is_the_event_hash_and_the_leaf() -> None:
    """`eventlog.hashing` and the recipe give the vector's event hash and leaf."""
    ours = event_hash(
        tenant_id="acme", stream_id="session:trip-1", version=1,
        event_id=uuid.UUID("01a24c2e-e356-740d-a5db-5cde4d039c0e"), type="checkpoint_created",
        recorded_at=datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
        data=b'{"session_id":"trip-1"}', prev_hash=GENESIS_HASH)
    recipe = spec.export_event_hash({"tenant": "acme"}, LINE)
    assert (EVENT_HASH, EVENT_HASH, LEAF) == (ours.hex(), recipe.hex(), spec.leaf(recipe).hex())


def test_an_actor_is_the_tenth_part() -> None:
    """An event naming its actor: the recipe and `eventlog.hashing` agree."""
    line = dict(LINE, version=2, id="01a24c2e-e357-7000-8000-000000000002",
                data=base64.b64encode(b"{}").decode(), prev_hash=EVENT_HASH, actor="alice")
    ours = event_hash(
        tenant_id="acme", stream_id="session:trip-1", version=2,
        event_id=uuid.UUID("01a24c2e-e357-7000-8000-000000000002"), type="checkpoint_created",
        recorded_at=datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC), data=b"{}",
        prev_hash=bytes.fromhex(EVENT_HASH), actor="alice")
    assert (WITH_ACTOR, WITH_ACTOR) == (
        spec.export_event_hash({"tenant": "acme"}, line).hex(), ours.hex())


def test_the_readme_states_the_recipe_and_the_vector() -> None:
    """Where an auditor reads: the domain string, the parts, the leaf and the vector."""
    readme = " ".join(guide_text().split())
    assert [] == [text for text in (
        "checkpoint-eventlog/chain/v1", "8-byte big-endian", "SHA-256(0x00 || event hash)",
        json.dumps(LINE, separators=(",", ":")), f"event hash {EVENT_HASH}",
        f"leaf {LEAF}") if text not in readme]


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_an_export_and_its_header_give_every_leaf_and_the_root(
        target: object, tmp_path: Path) -> None:
    """Every event line of a whole-tenant export hashes (by the recipe, with the header's
    tenant) to its ``hash``; its leaves in file order give the root of the tenant's tree."""
    url = target.url  # type: ignore[attr-defined]

    async def run() -> tuple[bytes, bytes]:
        async with open_log(url) as log:
            for n in range(11):
                await log.append("a b+c", f"s-{n % 3}", [Noted(text=str(n))])
                await log.append("other", "s", [Noted(text=str(n))])
            with (tmp_path / "x.jsonl").open("wb") as sink:
                await export_log(log, sink, tenant_id="a b+c")
            head = await log.tree_head("a b+c")
            return head.root, head.size.to_bytes(8, "big")

    root, size = asyncio.run(run())
    lines = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    events = [line for line in lines if line.get("kind") == "event"]
    hashes = [spec.export_event_hash(lines[0], line) for line in events]
    assert ([line["hash"] for line in events], root, 11) == (
        [h.hex() for h in hashes], spec.root([spec.leaf(h) for h in hashes]),
        int.from_bytes(size, "big"))
