"""``eventlog migrate``, ``eventlog stats`` and ``eventlog cleanup``: looking after a log."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from rich.table import Table

from eventlog.adapters import DEFAULT_TENANT
from eventlog.checkpoints.elements import (
    ELEMENTS_ENCODING,
    chain_digests,
    decode_manifest,
    resolve_items,
)
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK
from eventlog.cli.render import pairs_table
from eventlog.cli.scope import require_tenant
from eventlog.interrupts.models import BatchState
from eventlog.log import EventLog
from projections.checkpoints import CHECKPOINTS, RUNS, SESSIONS
from projections.interrupts import BATCHES
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS, THREAD_VALUES, THREAD_WRITES
from projections.views import STREAM_HEADS

_CHUNK = 500
OPEN_BATCH_STATES = frozenset({BatchState.PENDING, BatchState.CLAIMED, BatchState.EFFECT_STARTED})
"""Batches waiting for an answer or being worked on (``unresolved`` is counted apart)."""


async def run_migrate(context: Context) -> int:
    """Create or upgrade the schema, then print the revision it is at."""
    async with context.open(upgrade=True, create=True) as log:
        revision = log.schema_revision
    if context.json:
        context.print_json({"url": context.shown_url(), "revision": revision})
    else:
        context.out.print(f"{context.shown_url()}: schema at revision {revision} (up to date)")
    return EXIT_OK


@dataclass
class TenantStats:
    """The counts ``stats`` shows for one tenant."""

    tenant_id: str
    events: int = 0
    streams: int = 0
    sessions: int = 0
    checkpoints: int = 0
    runs: int = 0
    open_batches: int = 0
    unresolved_batches: int = 0
    state_bytes: int = 0
    threads: int = 0
    thread_checkpoints: int = 0
    thread_bytes: int = 0


async def run_stats(context: Context) -> int:
    """Count per tenant from the views (one query per view)."""
    tenant: str | None = context.args.tenant
    async with context.open() as log:
        if tenant is not None:
            await require_tenant(log, tenant)
        stats = await tenant_stats(log, tenant)
    if context.json:
        context.print_json({"tenants": [asdict(row) for row in stats]})
        return EXIT_OK
    names = list(TenantStats.__dataclass_fields__)
    split = names.index("threads")
    context.out.print(_table("Per tenant: sessions (CheckpointStore), interrupts, events",
                             stats, names[:split]))
    context.out.print(_table("Per tenant: framework threads (LangGraph, Agent Framework)",
                             stats, ["tenant_id", *names[split:]]))
    if any(row.tenant_id == DEFAULT_TENANT for row in stats):
        context.out.print(f"* {DEFAULT_TENANT!r}: the tenant the LangGraph and Agent "
                          "Framework adapters use when no tenant_id is given")
    return EXIT_OK


_LABELS = {"sessions": "checkpoint sessions", "checkpoints": "session checkpoints",
           "state_bytes": "session state bytes"}
"""The first table's columns count the CheckpointStore's sessions only: a tenant of
LangGraph threads shows 0 there and its checkpoints in the threads' table."""


def _table(title: str, stats: list[TenantStats], names: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in names:
        table.add_column(_LABELS.get(name, name.replace("_", " ")),
                         no_wrap=name == "tenant_id",
                         justify="left" if name == "tenant_id" else "right")
    for row in stats:
        marked = row.tenant_id + (" *" if row.tenant_id == DEFAULT_TENANT else "")
        table.add_row(marked, *(str(getattr(row, name)) for name in names[1:]))
    return table


async def tenant_stats(log: EventLog, tenant: str | None) -> list[TenantStats]:
    """The counts of every tenant (or one), sorted by tenant id."""
    where = {} if tenant is None else {"tenant_id": tenant}
    stats: dict[str, TenantStats] = {}

    def of(row: dict[str, Any]) -> TenantStats:
        key = row["tenant_id"]
        return stats.setdefault(key, TenantStats(key))

    for row in await _rows(log, STREAM_HEADS, where, ("tenant_id", "version")):
        of(row).events += int(row["version"])
        of(row).streams += 1
    for row in await _rows(log, SESSIONS, where, ("tenant_id",)):
        of(row).sessions += 1
    for row in await _rows(log, RUNS, where, ("tenant_id",)):
        of(row).runs += 1
    sizes: dict[str, dict[bytes, int]] = defaultdict(dict)
    for row in await _rows(log, CHECKPOINTS, where, ("tenant_id", "state_digest", "state_size")):
        of(row).checkpoints += 1
        sizes[row["tenant_id"]][bytes(row["state_digest"])] = int(row["state_size"])
    for key, blobs in sizes.items():
        stats[key].state_bytes = sum(blobs.values())
    for row in await _rows(log, BATCHES, where, ("tenant_id", "state")):
        if row["state"] in OPEN_BATCH_STATES:
            of(row).open_batches += 1
        elif row["state"] == BatchState.UNRESOLVED:
            of(row).unresolved_batches += 1
    await _thread_stats(log, where, of)
    return [stats[key] for key in sorted(stats)]


async def _thread_stats(
    log: EventLog, where: dict[str, Any], of: Callable[[dict[str, Any]], TenantStats]
) -> None:
    """Threads, their checkpoints, and the bytes of their distinct live payloads (read
    in chunks: the views keep digests, not sizes)."""
    threads: set[tuple[str, str]] = set()
    digests: dict[str, set[bytes]] = defaultdict(set)
    for row in await _rows(log, THREAD_CHECKPOINTS, where,
                           ("tenant_id", "thread_id", "state_digest")):
        of(row).thread_checkpoints += 1
        threads.add((row["tenant_id"], row["thread_id"]))
        digests[row["tenant_id"]].add(bytes(row["state_digest"]))
    manifests: dict[str, set[bytes]] = defaultdict(set)
    for table in (THREAD_VALUES, THREAD_WRITES):
        for row in await _rows(log, table, where, ("tenant_id", "digest", "encoding")):
            digests[row["tenant_id"]].add(bytes(row["digest"]))
            if row["encoding"] == ELEMENTS_ENCODING:
                manifests[row["tenant_id"]].add(bytes(row["digest"]))
    for tenant, _ in threads:
        of({"tenant_id": tenant}).threads += 1
    for tenant, found in digests.items():
        wanted = sorted(found)
        for start in range(0, len(wanted), _CHUNK):
            blobs = await log.get_blobs(tenant, wanted[start:start + _CHUNK])
            of({"tenant_id": tenant}).thread_bytes += sum(map(len, blobs.values()))
    for tenant, found in manifests.items():  # values stored element by element
        elements = await _element_digests(log, tenant, sorted(found))
        wanted = sorted(elements - digests[tenant])
        for start in range(0, len(wanted), _CHUNK):
            blobs = await log.get_blobs(tenant, wanted[start:start + _CHUNK])
            of({"tenant_id": tenant}).thread_bytes += sum(map(len, blobs.values()))


async def _element_digests(log: EventLog, tenant: str, manifests: list[bytes]) -> set[bytes]:
    """The element digests of these manifests' values (their chains read to resolve them)."""
    found: set[bytes] = set()
    for start in range(0, len(manifests), _CHUNK):
        blobs = await log.get_blobs(tenant, manifests[start:start + _CHUNK])
        chains = sorted(chain_digests(blobs.values()))
        bases = {}
        for offset in range(0, len(chains), _CHUNK):
            bases.update(await log.get_blobs(tenant, chains[offset:offset + _CHUNK]))
        for data in blobs.values():
            manifest = decode_manifest(data)
            items = None if manifest is None else resolve_items(manifest, bases)
            found.update(digest for _, digest in items or ())
    return found


async def _rows(
    log: EventLog, table: str, where: dict[str, Any], columns: tuple[str, ...]
) -> list[dict[str, Any]]:
    return await log.query(ViewQuery(table, where, columns=columns))


async def run_cleanup(context: Context) -> int:
    """One maintenance pass; print what it did."""
    async with context.open() as log:
        result = await log.interrupts.cleanup(limit=context.args.limit)
    counts = asdict(result)
    if context.json:
        context.print_json(counts)
    else:
        pairs = [(name.replace("_", " "), value) for name, value in counts.items()]
        context.out.print(pairs_table("Cleanup pass", pairs))
    return EXIT_OK
