"""Bringing a SQL database's schema up to date with the Alembic scripts we ship.

Alembic (~140 ms to import) is imported by these functions when they first run, when a
SQL backend initializes, not with the storage package.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, MetaData

from eventlog._logging import get_logger
from eventlog.errors import SchemaNotCurrent, UnknownSchemaRevision

if TYPE_CHECKING:
    from alembic.config import Config

logger = get_logger(__name__)

VERSION_TABLE = "alembic_version"


def migrations_dir() -> Path:
    """Where the Alembic scripts are: inside the installed package, or the repo's top."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "migrations"
    return shipped if (shipped / "env.py").exists() else package.parent / "migrations"


def alembic_config(connection: Connection, schema: str | None, metadata: MetaData) -> Config:
    """An Alembic config bound to ``connection`` (no alembic.ini needed)."""
    from alembic.config import Config
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    config.attributes["schema"] = schema
    config.attributes["target_metadata"] = metadata
    return config


def head_revision() -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory
    script = ScriptDirectory(str(migrations_dir()))
    head = script.get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection, schema: str | None) -> str | None:
    """The revision the database is stamped with, or None for an empty database."""
    from alembic.runtime.migration import MigrationContext
    context = MigrationContext.configure(
        connection, opts={"version_table_schema": schema, "version_table": VERSION_TABLE}
    )
    return context.get_current_revision()


def upgrade_sync(
    connection: Connection, schema: str | None, metadata: MetaData, *, upgrade: bool
) -> str:
    """Check the stamp and upgrade to head (the caller holds the migration lock).

    Returns the revision now in use.
    """
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError
    config = alembic_config(connection, schema, metadata)
    script = ScriptDirectory.from_config(config)
    head = head_revision()
    found = current_revision(connection, schema)
    if found is not None:
        try:
            known = script.get_revision(found)
        except CommandError:
            known = None
        if known is None:
            raise UnknownSchemaRevision(found, head)
    if found == head:
        return head
    if not upgrade:
        raise SchemaNotCurrent(found, head, schema)
    command.upgrade(config, "head")
    logger.info("schema_upgraded", schema=schema, from_revision=found, to_revision=head)
    return head
