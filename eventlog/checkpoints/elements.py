"""Growing values stored once, element by element (issue 33 §1).

A chat thread's ``messages`` channel grows by one message a step, and every checkpoint
names a new version of it: stored whole, the thread holds the sum of every version's
length (quadratic in the steps). A value given as `Elements` (an ordered sequence of
payloads: LangGraph's adapter gives every ``list`` this way) is stored instead as

- its **elements**, each a content-addressed blob (a message is stored once per tenant
  however many versions and writes carry it), and
- a small **manifest** blob, the value's own digest: the ordered ``(encoding, digest)`` of
  its elements, written as a *delta* on the previous version of the channel that this
  store wrote (``keep`` its first items, then ``add`` these) with the digests of the whole
  chain of manifests it rests on (``chain``, nearest first, down to a full manifest). A
  full manifest is written at least every `MAX_CHAIN` + 1 versions, when nothing is known
  of the channel here (a new process), and when the base is gone.

What the promises become:

- **The chain covers the full state**: the put event names the manifest's digest (the
  value's, as before) and each element digest the manifest adds (`BlobRef.elements`);
  manifests name their chain and elements by digest. ``verify`` counts and hashes every
  element like any other blob.
- **References**: a stored value holds one reference to its manifest and one to each
  element its manifest *adds* (record rows, released with the value); what it keeps from
  its base is held by the base. So a removal keeps every value on the chain of a value it
  keeps (`chain_digests`, in `ThreadCheckpoints`), and a delta put requires its base
  value to exist as it commits (`RowRequired`): a base removed meanwhile refuses the put,
  which is written again as a full manifest.
- **Reads** read the manifests and elements after the view row (`resolve`): the
  checkpoint's statement, then one read of the chains (none when `ManifestCache` holds
  them) and one of the elements, for every row of the read however many.
- **A put costs what is new** (issue 41): the planner remembers, per channel, the
  elements its last put stored and the digest each was addressed by (`Seen`, within a
  budget of `_SEEN_BYTES`). A next put that starts with the very same `Payload` objects
  (the same bytes and encoding objects: LangGraph's adapter hands the same payload for an
  unchanged message) takes their items whole, compared by identity in C; otherwise an
  element whose bytes equal one of those (a memcmp) takes that digest and is not checked
  again; any other is checked and hashed. Equal bytes have one digest under one address
  function, so this is exact, never a guess: an element changed in place has other bytes
  and is hashed as new.

Nothing here does I/O but `resolve` and `copied_values` (through a ``get_blobs`` they
are given).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import is_
from typing import Any

import msgspec

from eventlog.checkpoints.thread_records import ChannelValue, Elements, Payload
from eventlog.errors import InvalidInput
from eventlog.events.threads import BlobRef, ThreadCheckpointPut
from eventlog.hashing import content_digest
from eventlog.validation import check_id
from projections.query import RowRequired
from projections.threads import THREAD_VALUES

ELEMENTS_ENCODING = "eventlog.elements"
"""The encoding label of a value stored as elements: its blob is a `Manifest`."""
MAX_CHAIN = 63
"""The most manifests a delta rests on: a full manifest at least every 64 versions, so a
read resolves a value from at most 64 small manifests and a prune can release what no
kept version's chain needs."""
BASE_FIELD = "elements_base"
"""The field of the refusal a delta put gets when its base is gone (then put in full)."""
_KNOWN = 4096
"""Channels whose last manifest a store remembers (least recently put forgotten)."""
_FOLDED_ITEMS = 1 << 18
"""Items (and chain digests) of the chain folds a store holds (`ManifestCache.fold`):
references to tuples other folds share, ~2 MB of them at most."""
_SEEN_BYTES = 32 << 20
"""The element bytes a planner holds (`Seen`, least recently put channel dropped first):
beyond it a channel's next put hashes every element again, as a new process would."""


class Manifest(msgspec.Struct, frozen=True, array_like=True):
    """A value's elements: its base's first ``keep`` items, then ``add``; ``chain`` names
    the base manifest and its own chain (nearest first; empty: a full manifest)."""

    chain: list[bytes]
    keep: int
    add: list[tuple[str, bytes]]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Manifest)


def decode_manifest(data: bytes) -> Manifest | None:
    """The manifest in ``data``; None when it is not one (damaged)."""
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def resolve_items(manifest: Manifest, blobs: Mapping[bytes, bytes]
                  ) -> list[tuple[str, bytes]] | None:
    """The ordered ``(encoding, digest)`` of the value ``manifest`` is, its chain's
    manifests read from ``blobs``; None when one is missing or damaged."""
    return ChainFolds(blobs).items(manifest)


class ChainFolds:
    """Resolves many manifests over one set of blobs, folding each chain suffix once.

    A thread's manifests share their chains: the next version's chain is this version's
    digest, then this version's chain. Resolved one by one, a page of 1,000 checkpoints
    decoded ~32 chain manifests each (half of ``alist``'s client time); here each chain
    manifest is decoded once and the items after folding the chain from its far end down
    to any manifest are kept, keyed by that whole suffix of digests (not by the manifest
    alone: a value is what its own chain says, whatever chain its base names). With a
    store's ``cache`` (a `ManifestCache` and the tenant) the folds of earlier reads and
    puts count too, so the latest checkpoint of a thread read again after a put folds
    one manifest, not its whole chain."""

    def __init__(self, blobs: Mapping[bytes, bytes] | None = None,
                 cache: tuple[ManifestCache, str] | None = None) -> None:
        self._blobs: dict[bytes, bytes] = dict(blobs or {})
        self._cache = cache
        self._decoded: dict[bytes, Manifest | None] = {}
        self._folded: dict[tuple[bytes, ...], list[tuple[str, bytes]]] = {}

    def add_blobs(self, blobs: Mapping[bytes, bytes]) -> None:
        """More stored manifests (by digest) to fold with."""
        self._blobs.update(blobs)

    def wanting(self, manifest: Manifest) -> list[bytes]:
        """The chain manifests ``manifest``'s value needs that no fold known yet covers."""
        start, _ = self._known(manifest.chain)
        return [digest for digest in manifest.chain[:start]
                if digest not in self._blobs and digest not in self._decoded]

    def items(self, manifest: Manifest) -> list[tuple[str, bytes]] | None:
        """The ordered ``(encoding, digest)`` of ``manifest``'s value; None when a chain
        manifest is missing or damaged."""
        chain = manifest.chain
        start, items = self._known(chain)
        for index in range(start - 1, -1, -1):
            step = self._manifest(chain[index])
            if step is None:
                return None
            items = items[:step.keep] + list(step.add)
            self._folded[tuple(chain[index:])] = items
        if start > 0 and self._cache is not None:
            self._cache[0].keep_fold(self._cache[1], tuple(chain), items)
        return items[:manifest.keep] + list(manifest.add)

    def _known(self, chain: list[bytes]) -> tuple[int, list[tuple[str, bytes]]]:
        """Where the longest known fold of a suffix of ``chain`` starts, and its items
        (``len(chain)`` and none: nothing known)."""
        for index in range(len(chain)):
            key = tuple(chain[index:])
            found = self._folded.get(key)
            if found is None and self._cache is not None:
                found = self._cache[0].fold(self._cache[1], key)
                if found is not None:
                    self._folded[key] = found
            if found is not None:
                return index, found
        return len(chain), []

    def _manifest(self, digest: bytes) -> Manifest | None:
        if digest not in self._decoded:
            data = self._blobs.get(digest)
            self._decoded[digest] = None if data is None else decode_manifest(data)
        return self._decoded[digest]


Address = Callable[[bytes], bytes]
"""The digest a blob is stored under: its SHA-256 (`content_digest`) on a plain log, its
sealed address on an encrypted one (`EventLog.blob_addresses`)."""


@dataclass(frozen=True)
class Known:
    """The last manifest this store put for one channel: its version, items, digest and
    chain (and what was known before it, to put the same version again identically)."""

    version: str
    items: tuple[tuple[str, bytes], ...]
    digest: bytes
    chain: tuple[bytes, ...]
    before: Known | None = None
    """One level only (its own ``before`` dropped): a chain of every version a channel
    ever had would grow with the thread."""


Item = tuple[str, bytes]
"""An element as a manifest names it: its encoding and its digest (address)."""


@dataclass(frozen=True)
class Seen:
    """The elements one channel's last put stored, in order: the `Payload` objects given
    and the checked `Item` each became under ``address`` (valid for that function only)."""

    address: Address
    payloads: tuple[Any, ...]
    items: tuple[Item, ...]
    size: int
    """The bytes of the elements held."""


def seen(value: Elements, items: tuple[Item, ...], address: Address,
         before: Seen | None = None, start: int = 0) -> Seen:
    """What to remember of a value just planned (its items checked), of which the first
    ``start`` elements are those ``before`` saw."""
    payloads = tuple(value.items)
    size = (before.size if before is not None and start else 0) + sum(
        len(payload.data) for payload in payloads[start:])
    return Seen(address, payloads, items, size)


@dataclass
class _Planned:
    name: str
    manifest: bytes
    elements: list[bytes]
    """The data of each distinct element the manifest adds (one reference each)."""
    base: str
    known: Known | None
    digests: list[bytes] | None = None
    """The content digest of each of ``elements`` when already known (a plain log's
    address is its content digest), so that they are not hashed again."""


@dataclass
class Plan:
    """What one put stores as elements: the channels as `put_event` takes them (each
    element-stored value replaced by its manifest), the rows its deltas rest on, and
    what to remember once it is appended."""

    channels: dict[str, Payload | ChannelValue]
    planned: dict[str, _Planned] = field(default_factory=dict)
    require: list[RowRequired] = field(default_factory=list)
    elements: dict[str, tuple[tuple[str, bytes], ...]] = field(default_factory=dict)
    """Each element-stored channel's items (encoding, digest) as put."""
    folds: dict[tuple[bytes, ...], tuple[tuple[str, bytes], ...]] = field(default_factory=dict)
    """What each stored manifest's digest followed by its chain folds to (its value's
    items): a later read's `ChainFolds` of the next version starts from it."""

    def manifests(self) -> list[bytes]:
        """The manifests this put stores."""
        return [planned.manifest for planned in self.planned.values()]

    def apply(self, event: ThreadCheckpointPut, attach: list[bytes]
              ) -> tuple[ThreadCheckpointPut, list[bytes]]:
        """The put event with each element-stored channel's base and element digests,
        and its attachments with the elements."""
        if not self.planned:
            return event, attach
        refs = []
        extra: list[bytes] = []
        for ref in event.channels:
            planned = self.planned.get(ref.name)
            if planned is None:
                refs.append(ref)
                continue
            digests = planned.digests
            if digests is None:
                digests = [content_digest(data) for data in planned.elements]
            refs.append(msgspec.structs.replace(
                ref, base=planned.base, elements=[digest.hex() for digest in digests]))
            extra += planned.elements
        return msgspec.structs.replace(event, channels=refs), attach + extra


def split(value: Elements, address: Address = content_digest, before: Seen | None = None,
          field_name: str = "value") -> tuple[list[Item], int]:
    """A value's ``(encoding, digest)`` items, checked and addressed in one pass, and how
    many leading elements were taken from ``before``.

    What ``before`` (the channel's last put, under the same ``address``) saw is not done
    again: when the value starts with the very same `Payload` objects (frozen, holding
    immutable bytes and str: the very same element), their items are taken whole
    (identity, compared in C), and the elements after them are checked and hashed;
    otherwise an element whose bytes it saw, under the same encoding, takes that item (a
    dict lookup and a memcmp). Every other element is checked as `check_elements` checks
    it and hashed."""
    if not isinstance(value, Elements) or not isinstance(value.items, tuple | list):
        raise InvalidInput(field_name, "must be Elements(a sequence of Payload)")
    usable = before if before is not None and before.address is address else None
    start = _unchanged(value.items, usable)
    items = list(usable.items[:start]) if usable is not None and start else []
    # Past a whole unchanged prefix the rest is new (a list that grew): a lookup by bytes
    # (built over every element seen) pays only when the prefix did not hold.
    known = _lookup(usable) if usable is not None and not start else {}
    for n in range(start, len(value.items)):
        items.append(_item(value.items[n], known, address, f"{field_name}[{n}]"))
    return items, start


def _unchanged(elements: Sequence[Any], before: Seen | None) -> int:
    """How many leading elements are the very objects ``before`` saw (all or none)."""
    if before is None or not before.payloads or len(elements) < len(before.payloads):
        return 0
    if all(map(is_, elements[:len(before.payloads)], before.payloads)):
        return len(before.payloads)
    return 0


def _lookup(before: Seen) -> dict[bytes, Item]:
    # Exact bytes and str only: a subclass may redefine equality.
    return {payload.data: item for payload, item in zip(before.payloads, before.items,
                                                        strict=True)
            if type(payload.data) is bytes and type(payload.encoding) is str}


def _item(element: Any, known: Mapping[bytes, Item], address: Address, where: str) -> Item:
    if not isinstance(element, Payload):
        raise InvalidInput(where, "must be a Payload(encoding, bytes)")
    data, encoding = element.data, element.encoding
    if type(data) is bytes and type(encoding) is str:
        item = known.get(data)
        if item is not None and item[0] == encoding:
            return item
    if not isinstance(data, bytes):
        raise InvalidInput(where, "must be a Payload(encoding, bytes)")
    check_id(f"{where}.encoding", encoding)
    return (encoding, address(data))


def added_data(value: Elements, items: Sequence[Item], added: Sequence[bytes]) -> list[bytes]:
    """The data of each digest of ``added`` (a manifest's additions: the end of
    ``items``, the checked items of ``value``), found from the end."""
    wanted = set(added)
    found: dict[bytes, bytes] = {}
    for n in range(len(items) - 1, -1, -1):
        if len(found) == len(wanted):
            break
        digest = items[n][1]
        if digest in wanted and digest not in found:
            found[digest] = value.items[n].data
    return [found[digest] for digest in added]


def plan_value(items: list[Item], base: Known | None
               ) -> tuple[bytes, list[bytes], tuple[bytes, ...]]:
    """The manifest of ``items`` (a delta on ``base`` when one is given and its chain is
    short enough), the digests of the distinct elements it adds, and its chain."""
    if base is not None and len(base.chain) < MAX_CHAIN:
        keep = _common_prefix(base.items, items)
        chain = (base.digest, *base.chain)
    else:
        keep, chain = 0, ()
    added = items[keep:]
    manifest = _encoder.encode(Manifest(list(chain), keep, added))
    return manifest, list(dict.fromkeys(digest for _, digest in added)), chain


def _common_prefix(old: Sequence[Item], new: Sequence[Item]) -> int:
    if len(old) <= len(new) and tuple(new[:len(old)]) == old:
        return len(old)  # a list that only grew: one comparison in C (items shared)
    count = 0
    for left, right in zip(old, new, strict=False):
        if left != right:
            break
        count += 1
    return count


_Key = tuple[str, str, str, str]
"""A channel: tenant, thread, namespace and name."""


class ElementPlanner:
    """Plans puts of element-stored values from what this store last put per channel
    (kept in memory, `_KNOWN` channels, and the element bytes of `Seen` within
    `_SEEN_BYTES`): nothing is read to plan a delta, and the base it names is required
    to exist as the put commits. What a put teaches is kept only once it is appended
    (the ``commit`` `plan` returns), so a failed write leaves what was known as it was."""

    def __init__(self) -> None:
        self._known: OrderedDict[_Key, Known] = OrderedDict()
        self._seen: OrderedDict[_Key, Seen] = OrderedDict()
        self._seen_bytes = 0

    def plan(self, tenant_id: str, thread_id: str, namespace: str,
             channels: Mapping[str, Payload | ChannelValue | Elements], *,
             deltas: bool = True, address: Address = content_digest,
             ) -> tuple[Plan, Callable[[], None]]:
        """The plan of one put, and what to call once it is appended (remember it);
        manifests name elements and bases by ``address``."""
        plan = Plan(channels={})
        remember: list[tuple[_Key, Known, Seen]] = []
        for name, given in channels.items():
            if isinstance(given, Elements):  # content addressed: the manifest's digest
                items, _ = split(given, address, None, f"channels[{name!r}]")
                manifest, added, _ = plan_value(items, None)
                plan.channels[name] = Payload(ELEMENTS_ENCODING, manifest)
                plan.planned[name] = _Planned(name, manifest, added_data(given, items, added),
                                              "", None, _content(added, address))
            elif isinstance(given, ChannelValue) and isinstance(given.value, Elements):
                key = (tenant_id, thread_id, namespace, name)
                remember.append(self._plan_channel(plan, key, given, deltas, address))
            else:
                plan.channels[name] = given

        def commit() -> None:
            for key, known, seen in remember:
                self._remember(key, known, seen)

        return plan, commit

    def _plan_channel(self, plan: Plan, key: _Key, given: ChannelValue, deltas: bool,
                      address: Address) -> tuple[_Key, Known, Seen]:
        """Plan one channel's value as a manifest (a delta where this store knows a base),
        and what to remember of it."""
        name = key[3]
        assert isinstance(given.value, Elements)  # the caller's test
        value = given.value
        last = self._seen.get(key)
        items, start = split(value, address, last, f"channels[{name!r}].value")
        known = self._known.get(key) if deltas else None
        if known is not None and known.version == given.version:
            known = known.before  # the same version again: the same manifest
        if known is not None and known.version == given.version:
            known = None
        manifest, added, chain = plan_value(items, known)
        base = known.version if chain and known is not None else ""
        plan.channels[name] = ChannelValue(given.version, Payload(ELEMENTS_ENCODING, manifest))
        plan.planned[name] = _Planned(name, manifest, added_data(value, items, added), base,
                                      known, _content(added, address))
        if base:
            plan.require.append(RowRequired(
                THREAD_VALUES,
                {"tenant_id": key[0], "thread_id": key[1], "namespace": key[2],
                 "channel": name, "channel_version": base},
                BASE_FIELD, f"channel {name!r}: its base version {base!r} is gone"))
        before = None if known is None else replace(known, before=None)
        frozen = tuple(items)
        digest = address(manifest)
        plan.folds[(digest, *chain)] = frozen
        plan.elements[name] = frozen
        return (key, Known(given.version, frozen, digest, chain, before),
                seen(value, frozen, address, last, start))

    def _remember(self, key: _Key, known: Known, seen: Seen) -> None:
        self._known[key] = known
        self._known.move_to_end(key)
        if len(self._known) > _KNOWN:
            self._drop(self._known.popitem(last=False)[0])
        old = self._seen.pop(key, None)
        self._seen_bytes -= 0 if old is None else old.size
        self._seen[key] = seen
        self._seen_bytes += seen.size
        while self._seen_bytes > _SEEN_BYTES and self._seen:
            self._seen_bytes -= self._seen.popitem(last=False)[1].size

    def _drop(self, key: _Key) -> None:
        self._known.pop(key, None)
        old = self._seen.pop(key, None)
        self._seen_bytes -= 0 if old is None else old.size

    def forget(self, tenant_id: str, thread_id: str) -> None:
        """Forget what was put to the thread (after a refused delta)."""
        for key in [key for key in self._known if key[:2] == (tenant_id, thread_id)]:
            self._drop(key)
        for key in [key for key in self._seen if key[:2] == (tenant_id, thread_id)]:
            self._drop(key)


def _content(digests: list[bytes], address: Address) -> list[bytes] | None:
    """``digests`` when they are content digests (a plain log's addresses), else None."""
    return digests if address is content_digest else None


def is_base_refusal(error: InvalidInput) -> bool:
    """Whether ``error`` is a delta put's refusal because its base is gone."""
    return error.field == BASE_FIELD


def check_elements(field_name: str, value: Any) -> Elements:
    """An `Elements` of `Payload`s (their labels are checked as a payload's are)."""
    if not isinstance(value, Elements) or not isinstance(value.items, tuple | list):
        raise InvalidInput(field_name, "must be Elements(a sequence of Payload)")
    for n, item in enumerate(value.items):
        if not isinstance(item, Payload) or not isinstance(item.data, bytes):
            raise InvalidInput(f"{field_name}[{n}]", "must be a Payload(encoding, bytes)")
        check_id(f"{field_name}[{n}].encoding", item.encoding)
    return value


def write_manifest(value: Elements, address: Address = content_digest
                   ) -> tuple[bytes, list[bytes]]:
    """A pending write's value as a full manifest and the distinct elements' data."""
    items, _ = split(value, address)
    manifest, added, _ = plan_value(items, None)
    return manifest, added_data(value, items, added)


def added_digests(manifest: Manifest) -> list[str]:
    """The distinct element digests ``manifest`` adds (what its value references), hex."""
    return [digest.hex() for digest in dict.fromkeys(digest for _, digest in manifest.add)]


# -- reads ---------------------------------------------------------------------------------

GetBlobs = Callable[[list[bytes]], Awaitable[dict[bytes, bytes]]]
"""Reads blobs of one tenant by digest (however many: it chunks)."""


class ManifestCache:
    """Manifests by (tenant, digest), the most recently used `_KNOWN` of them: bytes that
    never change for a digest and hold only digests (no payload), so a reader that has
    one need not read it again. Filled by this store's own puts and reads."""

    def __init__(self) -> None:
        self._held: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()
        self._folds: OrderedDict[tuple[str, tuple[bytes, ...]], list[tuple[str, bytes]]] = (
            OrderedDict())
        self._fold_items = 0

    def fold(self, tenant_id: str, chain: tuple[bytes, ...]
             ) -> list[tuple[str, bytes]] | None:
        """The items a chain folds to, if a fold of it is held (`ChainFolds`)."""
        found = self._folds.get((tenant_id, chain))
        if found is not None:
            self._folds.move_to_end((tenant_id, chain))
        return found

    def keep_fold(self, tenant_id: str, chain: tuple[bytes, ...],
                  items: list[tuple[str, bytes]]) -> None:
        """Hold what ``chain`` folds to (never changed by a reader: each fold step makes
        a new list), the least recently used dropped past `_FOLDED_ITEMS` items."""
        key = (tenant_id, chain)
        if key in self._folds:
            self._folds.move_to_end(key)
            return
        self._folds[key] = items
        self._fold_items += len(items) + len(chain)
        while self._fold_items > _FOLDED_ITEMS and len(self._folds) > 1:
            (_, dropped_chain), dropped = self._folds.popitem(last=False)
            self._fold_items -= len(dropped) + len(dropped_chain)

    def get(self, tenant_id: str, digests: Iterable[bytes]) -> dict[bytes, bytes]:
        """The cached manifests among ``digests``."""
        found = {}
        for digest in digests:
            data = self._held.get((tenant_id, digest))
            if data is not None:
                found[digest] = data
                self._held.move_to_end((tenant_id, digest))
        return found

    def put(self, tenant_id: str, manifests: Iterable[bytes],
            address: Address = content_digest) -> None:
        """Remember these manifests (their bytes, stored under ``address``)."""
        self.hold(tenant_id, {address(data): data for data in manifests})

    def hold(self, tenant_id: str, manifests: Mapping[bytes, bytes]) -> None:
        """Remember these manifests (by the digest each is stored under)."""
        for digest, data in manifests.items():
            self._held[(tenant_id, digest)] = data
            if len(self._held) > _KNOWN:
                self._held.popitem(last=False)

    def put_plan(self, tenant_id: str, plan: Plan, address: Address) -> None:
        """Remember what an appended put stored: its manifests and their folds."""
        self.put(tenant_id, plan.manifests(), address)
        for chain, items in plan.folds.items():
            self.keep_fold(tenant_id, chain, list(items))


async def resolve(manifests: Iterable[bytes], get_blobs: GetBlobs,
                  cache: tuple[ManifestCache, str] | None = None,
                  read: Mapping[bytes, bytes] | None = None,
                  ) -> dict[bytes, Elements | None]:
    """Each manifest's value (keyed by the manifest's bytes), None when a blob it needs is
    gone: one read of every chain's manifests (those not in ``cache``, a cache and the
    tenant), then one of every element not among ``read`` (blobs already read with the
    rows, by digest: `ViewQuery.blobs`)."""
    decoded = {data: decode_manifest(data) for data in dict.fromkeys(manifests)}
    if not decoded:
        return {}
    folds = ChainFolds(cache=cache)
    chains = list(dict.fromkeys(
        digest for found in decoded.values() if found is not None
        for digest in folds.wanting(found)))
    blobs = {} if cache is None else cache[0].get(cache[1], chains)
    missing = [digest for digest in chains if digest not in blobs]
    if missing:
        fetched = await get_blobs(missing)
        blobs.update(fetched)
        if cache is not None:
            cache[0].hold(cache[1], fetched)
    folds.add_blobs(blobs)
    items: dict[bytes, list[tuple[str, bytes]] | None] = {
        data: None if found is None else folds.items(found)
        for data, found in decoded.items()
    }
    wanted = list(dict.fromkeys(digest for found in items.values() if found
                                for _, digest in found))
    elements = {} if read is None else {digest: read[digest] for digest in wanted
                                        if digest in read}
    missing = [digest for digest in wanted if digest not in elements]
    if missing:
        elements.update(await get_blobs(missing))
    result: dict[bytes, Elements | None] = {}
    for data, found in items.items():
        if found is None or any(digest not in elements for _, digest in found):
            result[data] = None
        else:
            result[data] = Elements(tuple(Payload(encoding, elements[digest])
                                          for encoding, digest in found))
    return result


def stored(encoding: str, data: bytes | None, resolved: Mapping[bytes, Elements | None]
           ) -> Payload | Elements | None:
    """A payload as read (None: gone), a manifest replaced by its resolved value."""
    if data is None:
        return None
    if encoding == ELEMENTS_ENCODING:
        return resolved.get(data)
    return Payload(encoding, data)


def chain_digests(manifests: Iterable[bytes]) -> set[bytes]:
    """Every manifest digest the chains of these manifests (their bytes) rest on."""
    return {digest for data in manifests
            if (found := decode_manifest(data)) is not None for digest in found.chain}


# -- copies --------------------------------------------------------------------------------

async def copied_values(
    values: Mapping[str, list[BlobRef]], blobs: dict[bytes, bytes], get_blobs: GetBlobs,
) -> tuple[dict[str, list[BlobRef]], list[bytes]] | None:
    """The stored values of a copy (by namespace) with the element references each holds,
    and the element digests they add to what the copy attaches. A value whose chain rests
    on a manifest the copy does not carry is copied as a full manifest (added to
    ``blobs``). None when a manifest or element it needs is gone."""
    result: dict[str, list[BlobRef]] = {}
    extra: list[bytes] = []
    for namespace, refs in values.items():
        present = {bytes.fromhex(ref.digest) for ref in refs}
        copied = result[namespace] = []
        for ref in refs:
            data = blobs.get(bytes.fromhex(ref.digest))
            if ref.encoding != ELEMENTS_ENCODING or data is None:
                copied.append(ref)
                continue
            manifest = decode_manifest(data)
            if manifest is None:
                return None
            if all(digest in present for digest in manifest.chain):
                copied.append(msgspec.structs.replace(ref, elements=added_digests(manifest)))
                extra += [bytes.fromhex(digest) for digest in added_digests(manifest)]
                continue
            chain = await get_blobs(manifest.chain)
            items = resolve_items(manifest, chain)
            if items is None:
                return None
            full = _encoder.encode(Manifest([], 0, items))
            digest = content_digest(full)
            blobs[digest] = full
            distinct = list(dict.fromkeys(item for _, item in items))
            copied.append(msgspec.structs.replace(
                ref, digest=digest.hex(), base="", elements=[d.hex() for d in distinct]))
            extra += [digest, *distinct]
    return result, extra


def copied_writes(writes: Iterable[Mapping[str, Any]], blobs: Mapping[bytes, bytes]
                  ) -> dict[bytes, list[bytes]]:
    """The element digests of each write stored as elements (by its manifest's digest)."""
    found: dict[bytes, list[bytes]] = {}
    for write in writes:
        data = blobs.get(write["digest"])
        if write["encoding"] != ELEMENTS_ENCODING or data is None:
            continue
        manifest = decode_manifest(data)
        if manifest is not None:
            found[write["digest"]] = [bytes.fromhex(d) for d in added_digests(manifest)]
    return found
