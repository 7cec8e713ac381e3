"""What every storage contract shares: a name, and one open and one close."""

from __future__ import annotations

import abc

from eventlog.telemetry import Database


class StorageLifecycle(abc.ABC):
    """The root of the storage contracts: a backend is opened once and closed once,
    whichever of the contracts (events, blobs, views, replica) it implements."""

    name: str
    """A short name for messages and logs: ``memory``, ``sqlite``, ``postgresql``, ``file``."""

    @property
    def database(self) -> Database:
        """Where the data lives, in OpenTelemetry's database words: what the spans and
        durations of the log's calls to this backend carry (``db.system.name``,
        ``db.namespace``, ``server.address``/``server.port``). By default the backend's
        name alone; a backend says more by overriding it."""
        return Database(system=self.name)

    @abc.abstractmethod
    async def open(self, *, upgrade: bool) -> str:
        """Connect and bring the schema up to date (unless ``upgrade`` is false).

        Returns the schema revision in use. Upgrades are serialized across processes. A
        database stamped with a revision this code does not know raises
        `UnknownSchemaRevision` naming both revisions; with ``upgrade=False`` a database
        that is behind raises `SchemaError`.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and locks. Never disposes an engine the caller passed in."""
