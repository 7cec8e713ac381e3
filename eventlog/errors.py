"""The errors this library raises.

    EventLogError
    ├── InvalidInput (also a ValueError)      a caller's argument was wrong; nothing written
    │   ├── InvalidId                          an id empty, too long, or with control characters
    │   ├── PayloadTooLarge                    event or state bytes over the configured maximum
    │   ├── InvalidEvent                       not an instance of a registered event type
    │   │   └── UnreadableEvent                encodes to bytes that do not decode back as its type
    │   ├── FrameworkConflict                  a thread another framework's adapter holds
    │   ├── ReleaseNotHeld                     a release of blob references its stream does not hold
    │   ├── SourceRefused                      a store named for adoption is not what was said
    │   ├── DigestRefused                      a kept digest edited, or not signed by the key
    │   └── AdoptionFailed                     a checkpoint could not be taken from another store
    ├── InvalidURL (also a ValueError)         a malformed log URL or an unknown scheme
    ├── UnknownEventType                       a stored tag that the registry does not know
    ├── CorruptEvent                           stored bytes that do not decode as their type
    ├── CorruptBlob                            stored blob bytes that do not hash to their digest
    ├── ForgedEvent                            an event the writer key did not sign, refused
    ├── BlobMissing                            a blob the views reference is not stored
    ├── StateDecodeError                       a stored state that does not decode as asked
    ├── VersionConflict                        the stream was not at the expected version
    ├── NotThreadHead                          a fenced put or write not based on the thread's head
    ├── TreeRebuildRefused                     a tree rebuild that would hide a rewrite of the log
    ├── TreeDamaged                            a stored tree node a head or a proof needs is missing
    │   └── TreeMismatch                       a stored tree not its events': no head signed
    ├── CapacityExceeded                       a scope holds its most open interrupt batches
    ├── ExportIncomplete                       an export could not read every event it was to write
    ├── ImportRefused                          the target holds another history for a file's stream
    ├── WrongThread (also a RuntimeError)      a blocking adapter call on its own loop's thread
    ├── NotRunning (also a RuntimeError)       a blocking adapter call while its loop is not running
    ├── SchemaError                            the database schema cannot be used
    │   ├── UnknownSchemaRevision              stamped with a revision this code does not know
    │   └── SchemaNotCurrent                   empty or older, and opened without upgrade
    ├── StoreLocked                            another process holds a file store's lock
    ├── SealError                              encrypted data cannot be read as it should
    │   ├── SubjectErased                      the subject's data key was destroyed (erasure)
    │   ├── KeyringRequired                    encrypted data read by a log opened without a keyring
    │   │   └── WriteNeedsKeyring              a write to an encrypted log without its keyring
    │   ├── KeyUnavailable                     no data key (or no usable keyring) to open the data
    │   │   └── WrongKeyring                   a write with a keyring the log is not encrypted under
    │   ├── LogNotEncrypted                    a keyring's write to a log written without one
    │   └── SealRefused                        plaintext, or ciphertext of another place, refused
    ├── ConsumerError                          a durable consumer could not go on
    │   ├── ConsumerHeld                       another holder's lease on the consumer is current
    │   ├── ConsumerFenced                     a newer holder (or a reset) took the consumer over
    │   ├── ConsumerScopeChanged               reopened with another tenant or types than stored
    │   ├── ConsumerTampered                   its row was not written by the application
    │   └── UnknownConsumer                    no consumer of that name
    └── StorageError                           the backend failed; the driver error is __cause__
        └── CommitOutcomeUnknown               the connection dropped during commit

Every error carries the facts that explain it as attributes. Driver errors are translated
in one place per backend and keep the original as ``__cause__``: callers never import
asyncpg or sqlite3 to catch ours.
"""

from __future__ import annotations


class EventLogError(Exception):
    """The base of every error raised by checkpoint-eventlog."""


class InvalidInput(EventLogError, ValueError):
    """A caller's argument was rejected before anything was written."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class InvalidId(InvalidInput):
    """An identifier is empty, over-long, not a string, or contains control characters."""


class PayloadTooLarge(InvalidInput):
    """An encoded event or state is larger than the configured maximum."""

    def __init__(self, field: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(field, f"{size} bytes is over the maximum of {limit} bytes")


class InvalidEvent(InvalidInput):
    """An object given as an event is not an instance of a registered event type."""


class UnreadableEvent(InvalidEvent):
    """An event to append encodes to bytes that do not decode back as its type: a field
    holding a value of another type (msgspec does not check types when a Struct is made),
    or a float that JSON cannot hold. Stored, it would raise `CorruptEvent` on every read,
    so nothing of the append is written. ``detail`` is msgspec's message, ``path`` the
    field it names (``$.n``), when it names one."""

    def __init__(self, stream_id: str, tag: str, detail: str) -> None:
        self.stream_id = stream_id
        self.tag = tag
        self.detail = detail
        self.path = detail.rpartition(" - at `")[2].rstrip("`") if " - at `" in detail else None
        super().__init__("events", (
            f"a {tag!r} event for stream {stream_id!r} does not decode back as its type "
            f"({detail}); nothing was written")[:500])


class FrameworkConflict(InvalidInput):
    """A framework adapter was pointed at a thread another framework's adapter holds (a
    LangGraph thread and an Agent Framework workflow share the tenant's thread names)."""

    def __init__(self, tenant_id: str, thread_id: str, holder: str, caller: str) -> None:
        self.tenant_id = tenant_id
        self.thread_id = thread_id
        self.holder = holder
        self.caller = caller
        super().__init__("thread_id", (
            f"thread {thread_id!r} of tenant {tenant_id!r} holds {holder} checkpoints, so "
            f"{caller} cannot use it: give one of them another name (LangGraph's thread_id, "
            "Agent Framework's workflow name) or another tenant_id"
        ))


class ReleaseNotHeld(InvalidInput):
    """An append (or an import) would release blob references that its stream's events do
    not hold: references another stream holds are never given up by this one."""

    def __init__(self, stream_id: str, digest: bytes, releasing: int, held: int) -> None:
        self.stream_id = stream_id
        self.digest = digest
        self.releasing = releasing
        self.held = held
        super().__init__("release", f"stream {stream_id!r} would release {releasing} "
                                    f"reference(s) to blob {digest.hex()}, its events hold "
                                    f"{held}; nothing was written")


class DigestRefused(InvalidInput):
    """A kept digest file was read and does not hold: its own SHA-256 does not match its
    heads (changed after it was written), or, with the operator's key, it is unsigned,
    signed by another key or its signature fails. An `InvalidInput` (the file given is
    refused) that the command reports as a finding, not as bad input."""


class SourceRefused(InvalidInput):
    """A store named for adoption (or as an export's target) is not what it was said to
    be: a database without the saver's tables, another major version of its schema, a
    directory that is not a checkpoint file store. Nothing was written."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        super().__init__("source", f"{source}: {reason}; nothing was written")


class AdoptionFailed(InvalidInput):
    """A checkpoint could not be taken from (or written to) another store: a value its
    serializer does not know, a corrupt row. What went before it was committed whole and
    verifies; a re-run continues from this checkpoint."""

    def __init__(self, thread_id: str, checkpoint_id: str, reason: str, *,
                 dry_run: bool = False) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        self.why = reason
        after = ("a dry run: nothing was written" if dry_run else "what came before it in "
                 "the thread was committed and a re-run continues from it")
        super().__init__("checkpoint", f"thread {thread_id!r}, checkpoint {checkpoint_id}: "
                                       f"{reason}; {after}")


class InvalidURL(EventLogError, ValueError):
    """A log URL is malformed or names a scheme no backend serves."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"invalid log URL {url!r}: {reason}")


class UnknownEventType(EventLogError):
    """A stored event carries a type tag that the event registry does not know."""

    def __init__(self, tag: str, *, stream_id: str | None = None, version: int | None = None):
        self.tag = tag
        self.stream_id = stream_id
        self.version = version
        where = f" (stream {stream_id!r} version {version})" if stream_id is not None else ""
        super().__init__(
            f"unknown event type {tag!r}{where}: register it with eventlog.register_event"
        )


class CorruptEvent(EventLogError):
    """A stored event's bytes do not decode as the type its tag names."""

    def __init__(
        self, tag: str, detail: str, *, stream_id: str | None = None, version: int | None = None
    ) -> None:
        self.tag = tag
        self.detail = detail
        self.stream_id = stream_id
        self.version = version
        where = f" at stream {stream_id!r} version {version}" if stream_id is not None else ""
        super().__init__(f"stored event {tag!r}{where} does not decode: {detail}")


class CorruptBlob(EventLogError):
    """A stored blob's bytes do not hash to the digest it is stored (and referenced) under:
    it was changed behind the log's back, and is never served as if it were the state."""

    def __init__(self, digest: bytes) -> None:
        self.digest = digest
        super().__init__(f"stored blob {digest.hex()} does not hash to its digest: it was "
                         "changed after it was written (run `eventlog verify`)")


class ForgedEvent(EventLogError):
    """An event a decision was about to read is not the application's: its writer
    signature does not hold (``forged``), it carries none where the tenant's events are
    signed (``unsigned``), or its stream's hash chain does not hold there
    (``broken_chain``). What decides from the log refuses it rather than obey it
    (`EventLog.signed`); `verify` names such an event too."""

    def __init__(self, tenant_id: str, stream_id: str, version: int, reason: str,
                 detail: str) -> None:
        self.tenant_id = tenant_id
        self.stream_id = stream_id
        self.version = version
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason} event: stream {stream_id!r} version {version} of tenant "
                         f"{tenant_id!r}: {detail} (refused: nothing is decided from it; "
                         "`eventlog verify` names every such event)")


class BlobMissing(EventLogError):
    """A blob that a stream's views reference is not stored, and no append to the stream
    since it was read explains it: it was deleted behind the log's back."""

    def __init__(self, digest: bytes, stream_id: str) -> None:
        self.digest = digest
        self.stream_id = stream_id
        super().__init__(f"stored blob {digest.hex()}, referenced by stream {stream_id!r}, "
                         "is missing: it was deleted behind the log's back (run "
                         "`eventlog verify`)")


class StateDecodeError(EventLogError):
    """A checkpoint's stored state does not decode as the requested type."""

    def __init__(self, checkpoint_id: str, target: str, detail: str) -> None:
        self.checkpoint_id = checkpoint_id
        self.target = target
        self.detail = detail
        super().__init__(f"checkpoint {checkpoint_id!r} state is not a {target}: {detail}")


class VersionConflict(EventLogError):
    """The stream was not at the version the append expected; nothing was written."""

    def __init__(self, stream_id: str, expected: int | str, actual: int) -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stream {stream_id!r} is at version {actual}, the append expected {expected}"
        )


class NotThreadHead(EventLogError):
    """A fenced put or write (single-writer mode) was not based on the thread's current
    head in its namespace: another writer moved the thread on, or deleted it. Nothing was
    written. Not a `VersionConflict`: deciding again cannot make the write current.

    ``expected`` is the checkpoint the write was based on (a put's parent, a write's
    checkpoint; None for a put without a parent), ``head`` the namespace's current head
    (None: the namespace holds no checkpoint), ``checkpoint_id`` what was being put or
    written to, ``reason`` why it was refused.
    """

    def __init__(
        self, tenant_id: str, thread_id: str, namespace: str, *, checkpoint_id: str,
        expected: str | None, head: str | None, reason: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.thread_id = thread_id
        self.namespace = namespace
        self.checkpoint_id = checkpoint_id
        self.expected = expected
        self.head = head
        self.reason = reason
        super().__init__(
            f"thread {thread_id!r} of tenant {tenant_id!r}, namespace {namespace!r}: "
            f"{checkpoint_id!r} is based on {expected!r} but the head is {head!r} "
            f"({reason}); nothing was written"
        )


class TreeDamaged(EventLogError):
    """A stored node of a tenant's transparency tree that a head or a proof needs is not
    there (the tree is derived data a DBA can delete): nothing is signed or proved from
    it. ``verify --head`` names the damage; ``tree-rebuild`` repairs it from the events."""

    def __init__(self, tenant_id: str, level: int, index: int) -> None:
        self.tenant_id = tenant_id
        self.level = level
        self.index = index
        super().__init__(
            f"tenant {tenant_id!r}: the stored transparency tree has no node (level {level}, "
            f"index {index}), which the head or proof needs: the tree is damaged (`eventlog "
            f"verify` names what; `eventlog tree-rebuild TENANT` rebuilds it from the events)")


class TreeMismatch(TreeDamaged):
    """The stored transparency tree a head would be signed from is not the tree of the
    tenant's events (more leaves than events, or leaves other than theirs: rows written
    behind the log's back, or events rewritten since they were integrated): nothing is
    signed or proved from it. ``detail`` says what differs."""

    def __init__(self, tenant_id: str, detail: str) -> None:
        self.tenant_id = tenant_id
        self.detail = detail
        self.level = 0
        self.index = 0
        EventLogError.__init__(
            self, f"tenant {tenant_id!r}: the stored transparency tree is not the tree of "
                  f"its events ({detail}): the log was rewritten or cut, or its tree written "
                  "behind its back; nothing is signed or proved from it (`eventlog verify "
                  "--head` names what; `eventlog tree-rebuild TENANT` rebuilds the tree)")


class TreeRebuildRefused(EventLogError):
    """A rebuild of a tenant's transparency tree was refused; nothing was written.

    The events no longer give the root of a signed head someone kept, or the stored tree
    holds other leaves than the events (they were cut or rewritten after they were
    integrated): a tree rebuilt from them would hide that. ``findings`` are
    ``(kind, detail)`` pairs (kinds ``cut``, ``rewritten``, ``unchecked``: no evidence left
    to check the events against); ``overridable`` is False when
    a kept head was contradicted (nothing overrides that) and True when only the stored
    tree was (``accept_new_root=True`` discards it as evidence).
    """

    def __init__(self, tenant_id: str, findings: list[tuple[str, str]], *,
                 overridable: bool) -> None:
        self.tenant_id = tenant_id
        self.findings = findings
        self.overridable = overridable
        said = "; ".join(detail for _, detail in findings)
        super().__init__(f"tenant {tenant_id!r}: the tree was not rebuilt: {said}")


class CapacityExceeded(EventLogError):
    """The tenant already has as many open batches as the store allows; nothing written."""

    def __init__(self, tenant_id: str, capacity: int) -> None:
        self.tenant_id = tenant_id
        self.capacity = capacity
        super().__init__(f"tenant {tenant_id!r} already has {capacity} open interrupt batches")


class ExportIncomplete(EventLogError):
    """An export could not read every event the tenant held when it began.

    On PostgreSQL an event becomes readable in log order only once every transaction
    older than its writer has ended; a transaction left open (an idle worker mid-
    transaction) past ``max_wait`` hides what committed after it began. Nothing after
    the events read was written: no end record, so the output is refused as truncated.
    ``missing`` maps each short stream to (the version it held, the version read).
    """

    def __init__(self, tenant_id: str, held: int, read: int,
                 missing: dict[str, tuple[int, int]], max_wait: float) -> None:
        self.tenant_id, self.held, self.read = tenant_id, held, read
        self.missing, self.max_wait = missing, max_wait
        streams = ", ".join(repr(stream) for stream in sorted(missing)[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        unread = sum(version - seen for version, seen in missing.values())
        super().__init__(
            f"export of tenant {tenant_id!r} is incomplete: events not readable after "
            f"waiting {max_wait:g} s: {unread} of {held}, in streams {streams}{more}; a "
            "transaction that began before they committed is still open. No end record "
            "was written")


class ImportRefused(EventLogError):
    """The target already holds a different history for a stream of the file.

    Nothing was written for the refusal found before importing; ``stream_id`` and
    ``version`` name where the histories part.
    """

    def __init__(self, stream_id: str, version: int, reason: str) -> None:
        self.stream_id = stream_id
        self.version = version
        self.reason = reason
        super().__init__(f"stream {stream_id!r} at version {version}: {reason}")


class WrongThread(EventLogError, RuntimeError):
    """A blocking method was called on the thread that runs the saver's own event loop."""

    def __init__(self, method: str, alternative: str) -> None:
        self.method = method
        super().__init__(
            f"{method}() blocks, and this thread runs the saver's event loop: it would wait "
            f"for itself. Use the async method ({alternative}) or an async graph call such "
            "as graph.ainvoke(...), or call from another thread (EventlogSaver runs its own "
            "loop for programs without one)."
        )


class NotRunning(EventLogError, RuntimeError):
    """A blocking method was called while the saver's event loop is not running."""

    def __init__(self, method: str) -> None:
        self.method = method
        super().__init__(
            f"{method}() waits for the saver's event loop, which is not running (not started "
            "yet, or finished); in a program without a loop use "
            "EventlogSaver.from_conn_string(...)"
        )


class SchemaError(EventLogError):
    """The database's schema cannot be used by this version of the library."""


class UnknownSchemaRevision(SchemaError):
    """The database is stamped with a schema revision this code does not know."""

    def __init__(self, found: str, known: str) -> None:
        self.found = found
        self.known = known
        super().__init__(
            f"database schema revision {found!r} is unknown to this version of "
            f"checkpoint-eventlog (its newest revision is {known!r}); upgrade the library"
        )


class SchemaNotCurrent(SchemaError):
    """The database (or PostgreSQL schema) is empty or at an older revision, and was opened
    with ``upgrade=False``."""

    def __init__(self, found: str | None, needed: str, schema: str | None) -> None:
        self.found = found
        self.needed = needed
        self.schema = schema
        where = f"schema {schema!r}" if schema else "database"
        super().__init__(
            f"the {where} is at revision {found or 'none'}, this code needs {needed}: "
            "open it with upgrade=True to create or upgrade it"
        )


class StoreLocked(EventLogError):
    """Another process holds the lock of a file-system store."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"file store {path!r} is locked by another process")


class SealError(EventLogError):
    """Encrypted data (a sealed state or event field) cannot be read as it should. Each
    carries the tenant and subject whose data it is."""

    def __init__(self, tenant_id: str, subject: str, detail: str) -> None:
        self.tenant_id = tenant_id
        self.subject = subject
        self.detail = detail
        super().__init__(detail)


class SubjectErased(SealError):
    """The subject's data key was destroyed (`EventLog.erase`): its states and free-text
    fields can never be read again. The records (ids, steps, times) still list."""

    def __init__(self, tenant_id: str, subject: str) -> None:
        super().__init__(tenant_id, subject,
                         f"subject {subject!r} of tenant {tenant_id!r} was erased: its data "
                         "key is destroyed and its data can no longer be read")


class KeyringRequired(SealError):
    """Encrypted data was read through a log opened without a keyring (``keyring=``,
    ``--keyring``, ``EVENTLOG_KEYRING``)."""

    def __init__(self, tenant_id: str, subject: str) -> None:
        super().__init__(tenant_id, subject,
                         f"the data of subject {subject!r} (tenant {tenant_id!r}) is encrypted: "
                         "open the log with its keyring (keyring=..., --keyring FILE or "
                         "EVENTLOG_KEYRING) to read it")


class KeyUnavailable(SealError):
    """The subject's data key is not in this log's database (a log imported without its
    keys), or the keyring given cannot unwrap it (another keyring)."""


def _kek_ids(ids: tuple[str, ...]) -> str:
    return " or ".join(repr(kek_id) for kek_id in ids) or "(none recorded)"


class WriteNeedsKeyring(KeyringRequired):
    """A write that would store data the log seals (a state, a free-text field), made by a
    log opened without a keyring on a log that is encrypted: refused, nothing written.
    ``expected`` are the ids of the key-encryption keys the log's data keys are wrapped
    under (the keyring to open it with)."""

    def __init__(self, expected: tuple[str, ...]) -> None:
        self.expected = expected
        SealError.__init__(self, "", "", (
            f"this log is encrypted under key-encryption key {_kek_ids(expected)}: a write "
            "without that keyring would store its data in the clear, so nothing was "
            "written; open the log with it (keyring=..., --keyring FILE or EVENTLOG_KEYRING)"))


class WrongKeyring(KeyUnavailable):
    """A write through a keyring that is not one the log's data keys are wrapped under (or
    one of that id that cannot unwrap the log's check value): refused, nothing written,
    so no subject's key is ever wrapped under a stranger's KEK. ``expected`` are the KEK
    ids the log records, ``given`` the keyring's."""

    def __init__(self, expected: tuple[str, ...], given: str, why: str = "") -> None:
        self.expected = expected
        self.given = given
        SealError.__init__(self, "", "", (
            f"this log is encrypted under key-encryption key {_kek_ids(expected)}, not the "
            f"keyring given ({given!r}{why}): nothing was written; open the log with its own "
            "keyring (after a rotation, the new one)"))


class LogNotEncrypted(SealError):
    """A write through a keyring to a log that holds data written without one: refused,
    nothing written (its reads with the keyring would refuse the plaintext, and without
    it the sealed data). Keep that log plain, or start the encrypted log as a new one."""

    def __init__(self) -> None:
        super().__init__("", "", (
            "this log was written without a keyring (it holds events but no encryption "
            "key): sealed data beside its plaintext could be read neither with the keyring "
            "nor without it, so nothing was written; open it without keyring=, or start the "
            "encrypted log in a new database"))


class SealRefused(SealError):
    """Data that must be ciphertext is not (a plaintext row where a sealed one belongs), or
    its ciphertext does not open where it is read (moved from another row, checkpoint,
    thread, subject or tenant). It is never served."""


class ConsumerError(EventLogError):
    """A durable consumer (`EventLog.subscribe`) could not be opened, acknowledged or reset."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(f"consumer {name!r}: {message}")


class ConsumerHeld(ConsumerError):
    """Another holder's lease on the consumer has not expired: one holder at a time."""

    def __init__(self, name: str, holder: str, lease_until: str) -> None:
        self.holder = holder
        self.lease_until = lease_until
        super().__init__(name, f"held by {holder!r} until {lease_until} (its lease); "
                               "open it with wait=True to wait for it")


class ConsumerFenced(ConsumerError):
    """The consumer was taken over (a newer holder's token, or a reset) since this holder
    claimed it: its acknowledgement is refused and it must stop delivering."""

    def __init__(self, name: str, token: int) -> None:
        self.token = token
        super().__init__(name, f"this holder's lease (token {token}) is no longer current: "
                               "another holder took the consumer over, or it was reset")


class ConsumerScopeChanged(ConsumerError):
    """A consumer reopened with another tenant or event types than it was created with."""

    def __init__(self, name: str, stored: str, asked: str) -> None:
        self.stored = stored
        self.asked = asked
        super().__init__(name, f"was created for {stored}, not {asked}: use another name, "
                               "or drop it first (eventlog consumers drop)")


class ConsumerTampered(ConsumerError):
    """The consumer's row is not one the application wrote: unsigned or wrongly signed in a
    log with a writer key, unreadable, or rolled back under its holder (its token went
    back, or the row is no longer the one the holder wrote). Refused, never obeyed: its
    position and fencing token are not trusted. ``reason`` is ``unsigned``, ``forged``,
    ``unreadable`` or ``rolled_back``. An operator who has checked the row adopts it with
    ``eventlog consumers reset NAME --to CURSOR`` (which the writer key signs), or drops
    it."""

    def __init__(self, name: str, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(name, f"its stored row is refused ({reason}): {detail}; check it "
                               "with `eventlog consumers`, then reset it to the position it "
                               "should have (eventlog consumers reset NAME --to CURSOR) or "
                               "drop it")


class UnknownConsumer(ConsumerError):
    """No consumer of that name is stored."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "no such consumer")


class StorageError(EventLogError):
    """The storage backend failed. The driver's own exception is ``__cause__``."""

    def __init__(self, backend: str, operation: str, detail: str) -> None:
        self.backend = backend
        self.operation = operation
        self.detail = detail
        super().__init__(f"{backend} {operation} failed: {detail}")


class CommitOutcomeUnknown(StorageError):
    """The connection was lost while committing: the append may or may not have happened."""
