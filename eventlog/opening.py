"""`open_log`: turn a URL (or an application's engine) into an open log with its stores
(`eventlog.face.OpenLog`).

Importing this module loads neither the log nor a store nor a backend: `open_log` loads
them when it first opens a log (`_layers`), so ``from eventlog import open_log`` costs a
program (a worker, a command, a test's child process) nothing until it opens one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from eventlog._logging import get_logger
from eventlog.clock import Clock, system_clock
from eventlog.errors import InvalidInput, InvalidURL, StorageError
from eventlog.validation import (
    DEFAULT_KEY_CACHE_SECONDS,
    DEFAULT_MAX_PAYLOAD_BYTES,
    check_actor,
    check_id,
    check_seconds,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from eventlog.events import EventRegistry
    from eventlog.face import OpenLog
    from eventlog.interrupts.models import InterruptOptions, Operation
    from eventlog.log import EventLog
    from eventlog.storage.base import StorageBackend
    from projections.base import Projection

logger = get_logger(__name__)

DEFAULT_URL = "sqlite:///eventlog.db"
"""The embedded default: a SQLite file in the working directory."""

DEFAULT_SCHEMA = "eventlog"
"""The PostgreSQL schema every table goes in unless ``schema=`` says otherwise."""


@asynccontextmanager
async def open_log(
    target: str | AsyncEngine | None = None,
    /,
    *,
    schema: str = DEFAULT_SCHEMA,
    upgrade: bool = True,
    clock: Clock = system_clock,
    registry: EventRegistry | None = None,
    projections: Sequence[Projection] | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    interrupt_options: InterruptOptions | None = None,
    operations: Iterable[Operation] | None = None,
    read_url: str | None = None,
    actor: str | None = None,
    keyring: Any = None,
    key_cache_seconds: float = DEFAULT_KEY_CACHE_SECONDS,
    writer_keys: Iterable[Any] = (),
    **backend_options: Any,
) -> AsyncIterator[OpenLog]:
    """Open the log at ``target``, yield it with its stores (an `OpenLog`), and close it
    on exit.

    ``target`` is a URL — ``sqlite:///path.db`` (the default, ``sqlite:///eventlog.db``),
    ``postgresql://…``, ``memory://`` or ``file:///dir`` — or an application's own
    SQLAlchemy ``AsyncEngine`` (SQLite or PostgreSQL), which the log uses but never
    disposes. Opening brings the schema up to date unless ``upgrade=False``; a database
    stamped with a revision this code does not know is refused. On PostgreSQL every table
    lives in ``schema``. ``clock`` supplies the time recorded on events.
    ``interrupt_options`` and ``operations`` (the trusted workflow operations; None trusts
    every one) configure ``log.interrupts``.

    ``read_url`` (PostgreSQL only) names a hot standby of the same database: the log's
    read side — `read_all`, `read_stream`, `query`, `verify`, `dump_views`, blobs, and so
    replay, export and the command's reports — reads there, still gap-safe. Appends, the
    stream heads they chain onto, and the stores (which decide writes on what they read)
    stay on ``target``.

    ``actor`` names the principal every event appended through this log (and its stores)
    is recorded as appended by, covered by the hash chain; `EventLog.acting_as` overrides
    it for a block. None (the default) records none: "not given", never a guess.
    ``keyring`` (a keyring file's path, or any `eventlog.crypto.KeyProvider`) encrypts
    the log: state payloads and free-text event fields are sealed under per-subject data
    keys kept wrapped in the log's database (docs/encryption.md). Without
    it, nothing is encrypted, and encrypted data already stored is refused on read
    (`KeyringRequired`) while ids, times, listings and `verify` work as ever.
    ``key_cache_seconds`` bounds how long an unwrapped data key is used before its row is
    read again (default 5 s; 0 reads it before every use): a subject another process
    erased is refused here at most that long after.

    A keyring that holds a writer key (`eventlog.crypto.WriterKeyProvider`; ``eventlog
    keys init`` makes one) signs every append: each event's chain hash, with the key's id
    (docs/encryption.md, "Only the application writes the log"). ``writer_keys`` are more writer
    *public* keys to trust (Ed25519 public keys, PEM text, or signed-note verifier keys):
    the keyring's own (current and retired) always are. Whatever decides from the log
    (`EventLog.signed`: retention's holds) and `verify` check signatures against them,
    and refuse an event the writer did not sign (`ForgedEvent`); a log opened with
    ``writer_keys`` and no keyring checks without being able to sign.
    """
    if actor is not None:
        check_actor(actor)
    check_seconds("key_cache_seconds", key_cache_seconds)
    log_type, face_type, inline_projections = _layers()
    provider = _keyring(keyring)
    signer, trusted = _writer(provider, writer_keys)
    storage = backend_for(target, schema=schema, **backend_options)
    reader = _replica(storage, read_url, schema, backend_options)
    log = log_type(
        storage, registry=registry, clock=clock, max_payload_bytes=max_payload_bytes,
        projections=inline_projections if projections is None else projections,
        reader=reader, actor=actor,
        sealer=None if provider is None else _sealer(storage, provider, key_cache_seconds),
        signer=signer, writer_keys=trusted,
    )
    face = face_type(log, interrupt_options=interrupt_options, operations=operations)
    try:
        face.schema_revision = log.schema_revision = await storage.open(upgrade=upgrade)
        if reader is not None:
            await _open_replica(storage, reader)
        _install_views(storage, log)
    except BaseException:
        await storage.close()
        if reader is not None:
            await reader.close()
        raise
    try:
        yield face
    finally:
        await face.close()


def _layers() -> tuple[type[EventLog], type[OpenLog], Sequence[Projection]]:
    """The log, the face over it and the inline projections, imported on first use."""
    from eventlog.face import OpenLog
    from eventlog.log import EventLog
    from projections import INLINE_PROJECTIONS

    return EventLog, OpenLog, INLINE_PROJECTIONS


def _keyring(keyring: Any) -> Any:
    if keyring is None:
        return None
    from eventlog.crypto import load_keyring

    return load_keyring(keyring)


def _writer(provider: Any, writer_keys: Iterable[Any]) -> tuple[Any, Any]:
    """The keyring's `EventSigner` (None when it holds no writer key) and the writer public
    keys to trust (None when there are none): the keyring's and ``writer_keys``."""
    from eventlog.writer_keys import WriterKeys, coerce_keys, signer_of

    signer = None if provider is None else signer_of(provider)
    keys = [*getattr(provider, "writer_public_keys", ()), *coerce_keys(writer_keys)]
    return signer, WriterKeys(keys) if keys else None


def _sealer(storage: StorageBackend, provider: Any, cache_seconds: float) -> Any:
    from eventlog.log._sealing import Sealer

    return Sealer(storage, provider, cache_seconds=cache_seconds)


def _install_views(storage: StorageBackend, log: EventLog) -> None:
    """Fold the views of a backend that keeps none (the file store) from its events."""
    from eventlog.storage.contracts import ViewsRebuiltOnOpen
    from projections.rebuilding import fold_events

    if isinstance(storage, ViewsRebuiltOnOpen):
        storage.install_views(
            fold_events(log.projections, (log.decode(e) for e in storage.stored_events()))
        )


def _replica(
    storage: StorageBackend, read_url: str | None, schema: str, options: dict[str, Any]
) -> StorageBackend | None:
    """The backend reads go to when ``read_url`` names a replica, else None."""
    if read_url is None:
        return None
    if not isinstance(read_url, str):
        raise InvalidInput("read_url", f"must be a URL, not {read_url!r}"[:200])
    if storage.name != "postgresql":
        raise InvalidInput("read_url", "reads from a replica need a PostgreSQL log, not "
                                       f"{storage.name}")
    # The replica holds the primary's schema, whichever way it was named (?schema= too).
    primary_schema = getattr(storage, "schema", None)
    reader = backend_for(read_url, schema=primary_schema or schema, **options)
    if reader.name != "postgresql":
        raise InvalidInput("read_url", "reads from a replica need PostgreSQL for both the "
                                       f"log and the replica, not {storage.name} and "
                                       f"{reader.name}")
    return reader


REPLICA_CATCH_UP_S = 30.0
"""How long opening waits for a replica to replay the primary's schema."""


async def _open_replica(storage: StorageBackend, reader: StorageBackend) -> None:
    """Open the replica read-only once it has replayed the primary's schema (which
    opening the primary may just have created or upgraded)."""
    from eventlog.storage.contracts import caught_up

    if not await caught_up(storage, reader, REPLICA_CATCH_UP_S):
        raise StorageError(reader.name, "open", f"the replica did not replay the primary's "
                                                f"log within {REPLICA_CATCH_UP_S:.0f} s")
    await reader.open(upgrade=False)


MAX_SCHEMA_BYTES = 63
"""PostgreSQL cuts longer identifiers silently, so two long names could share a schema."""


def check_schema(schema: Any) -> str:
    """``schema`` if it can name a PostgreSQL schema exactly, else `InvalidInput`."""
    name = check_id("schema", schema)
    if '"' in name:
        raise InvalidInput("schema", f"{name!r} contains a double quote")
    if len(name.encode()) > MAX_SCHEMA_BYTES:
        raise InvalidInput("schema", f"{name!r} is longer than {MAX_SCHEMA_BYTES} bytes, "
                                     "which PostgreSQL would cut short")
    return name


BackendFactory = Callable[..., "StorageBackend"]
"""Builds an unopened backend for a URL: ``factory(url, schema=schema, **options)``."""

_SCHEMES: dict[str, BackendFactory] = {}


def register_backend(scheme: str, factory: BackendFactory) -> None:
    """Let `open_log` open ``scheme://…`` URLs with ``factory(url, schema=…, **options)``.

    ``factory`` returns an unopened `eventlog.storage.base.StorageBackend` (a backend that
    lives outside this package registers itself this way). A scheme is case-insensitive
    and names one factory: registering a different one for a taken scheme is refused.
    """
    if not isinstance(scheme, str) or not scheme.isascii() or not scheme.strip():
        raise InvalidInput("scheme", f"must be a URL scheme, not {scheme!r}"[:200])
    scheme = scheme.lower()
    known = _SCHEMES.get(scheme)
    if known is not None and known is not factory:
        raise InvalidInput("scheme", f"{scheme!r} is already registered to {known!r}")
    _SCHEMES[scheme] = factory


def backend_for(
    target: str | AsyncEngine | None, *, schema: str = DEFAULT_SCHEMA, **options: Any
) -> StorageBackend:
    """The storage backend a URL or engine names; backends are imported only when used."""
    check_schema(schema)
    if target is None:
        target = DEFAULT_URL
    if not isinstance(target, str):
        return _backend_for_engine(target, schema, options)
    scheme, _, rest = target.partition("://")
    if not rest and scheme != "memory":
        raise InvalidURL(target, "expected scheme://…, e.g. sqlite:///eventlog.db")
    factory = _SCHEMES.get(scheme.lower())
    if factory is None:
        raise InvalidURL(target, f"unknown scheme {scheme.lower()!r}; use one of "
                                 f"{', '.join(sorted(_SCHEMES))}")
    return factory(target, schema=schema, **options)


# -- the built-in backends, each imported only when its scheme is opened ---------------------


def _memory(url: str, *, schema: str, **options: Any) -> StorageBackend:
    _no_options(options)
    from eventlog.storage.memory import MemoryBackend

    return MemoryBackend()


def _sqlite(url: str, *, schema: str, **options: Any) -> StorageBackend:
    from eventlog.storage.sqlite import SqliteBackend

    return SqliteBackend(path=_local_path(url), **options)


def _postgres(url: str, *, schema: str, **options: Any) -> StorageBackend:
    given = url
    url, schema = _schema_from_url(_postgres_url(url), schema)
    url, named = _distributed_from_url(url)
    url, pool_mode = _url_parameter(url, "pool_mode")
    # ?pool_mode= names the pooler in front of the server (docs/backends.md, "Behind PgBouncer").
    if pool_mode is not None and options.setdefault("pool_mode", pool_mode) != pool_mode:
        raise InvalidURL(given, f"names pool_mode {pool_mode!r} but "
                                f"pool_mode={options['pool_mode']!r} was also given")
    if _distributed(options) or named:
        from eventlog.storage.citus import CitusBackend

        return CitusBackend(url=url, schema=schema, **options)
    from eventlog.storage.postgres import PostgresBackend

    return PostgresBackend(url=url, schema=schema, **options)


def _distributed(options: dict[str, Any]) -> bool:
    """Pops ``distributed`` (a Citus cluster: `eventlog.storage.citus`) from ``options``."""
    distributed = options.pop("distributed", False)
    if not isinstance(distributed, bool):
        raise InvalidInput("distributed", f"must be True or False, not {distributed!r}"[:200])
    return distributed


def _file(url: str, *, schema: str, **options: Any) -> StorageBackend:
    _no_options(options)
    from eventlog.storage.files import FileBackend

    return FileBackend(Path(_local_path(url)))


for _scheme, _factory in (
    ("memory", _memory), ("sqlite", _sqlite), ("sqlite+aiosqlite", _sqlite),
    ("postgresql", _postgres), ("postgres", _postgres), ("postgresql+asyncpg", _postgres),
    ("file", _file),
):
    register_backend(_scheme, _factory)


def local_path(url: str) -> str | None:
    """The file or directory a local URL (``sqlite://``, ``file://``) names, else None."""
    if url.partition("://")[0].lower() in ("sqlite", "sqlite+aiosqlite", "file"):
        return _local_path(url)
    return None


def _backend_for_engine(engine: Any, schema: str, options: dict[str, Any]) -> StorageBackend:
    from sqlalchemy.ext.asyncio import AsyncEngine

    if not isinstance(engine, AsyncEngine):
        raise InvalidInput("target", f"must be a URL or an AsyncEngine, not {engine!r}")
    dialect = engine.dialect.name
    if dialect == "sqlite":
        from eventlog.storage.sqlite import SqliteBackend

        return SqliteBackend(engine=engine, **options)
    if dialect == "postgresql":
        if _distributed(options):
            from eventlog.storage.citus import CitusBackend

            return CitusBackend(engine=engine, schema=schema, **options)
        from eventlog.storage.postgres import PostgresBackend

        return PostgresBackend(engine=engine, schema=schema, **options)
    raise InvalidInput("target", f"engines of dialect {dialect!r} are not supported")


def _local_path(url: str) -> str:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise InvalidURL(url, "a local path needs three slashes, e.g. sqlite:///eventlog.db")
    path = unquote(parts.path)
    if parts.scheme.startswith("sqlite"):
        path = path[1:] if path.startswith("/") else path  # sqlite:///rel.db, sqlite:////abs.db
    if not path:
        raise InvalidURL(url, "the path is empty")
    return path


def _postgres_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.hostname and "host=" not in parts.query:
        raise InvalidURL(url, "a PostgreSQL URL needs a host, e.g. postgresql://user@host/db")
    try:
        _ = parts.port
    except ValueError as error:
        raise InvalidURL(url, f"bad port: {error}") from None
    return "postgresql://" + url.split("://", 1)[1]


def url_schema(url: str) -> str | None:
    """The schema a PostgreSQL URL names with ``?schema=NAME`` (None when it names none)."""
    values = [value for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True)
              if key == "schema"]
    return values[-1] if values else None


def _schema_from_url(url: str, schema: str) -> tuple[str, str]:
    """``?schema=NAME`` taken out of the URL (the driver knows no such parameter) and
    used as the schema; it must agree with ``schema`` unless that is the default."""
    named = url_schema(url)
    if named is None:
        return url, schema
    if schema not in (DEFAULT_SCHEMA, named):
        raise InvalidURL(url, f"names schema {named!r} but schema={schema!r} was also given")
    check_schema(named)
    return _url_parameter(url, "schema")[0], named


def _url_parameter(url: str, name: str) -> tuple[str, str | None]:
    """The URL without query parameter ``name`` (one of ours, which the driver would send
    the server as a setting), and the parameter's last value (None when absent)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    values = [value for key, value in pairs if key == name]
    if not values:
        return url, None
    query = urlencode([(key, value) for key, value in pairs if key != name])
    return urlunsplit(parts._replace(query=query)), values[-1]


def _distributed_from_url(url: str) -> tuple[str, bool]:
    """``?distributed=true`` (or ``false``) taken out of the URL, as ``?schema=`` is: a
    URL alone can then name a log on a Citus cluster (a child process, $EVENTLOG_URL)."""
    stripped, value = _url_parameter(url, "distributed")
    if value is None:
        return url, False
    if value.lower() not in ("true", "false"):
        raise InvalidURL(url, f"distributed={value!r}: use true or false")
    return stripped, value.lower() == "true"


def _no_options(options: dict[str, Any]) -> None:
    if options:
        raise InvalidInput(next(iter(options)), "is not an option of this backend")
