"""Bringing a SQL database's schema up to date with the Alembic scripts we ship.

Alembic (with Mako and Pygments, ~150-300 ms to import) is imported only to migrate: a
database already stamped with the newest shipped revision is recognised by reading its
stamp with SQLAlchemy and the revisions from the scripts' text (`shipped_head`), so a
process that opens an up-to-date log (every worker, every command) never imports it.
Anything else (an empty, older, unknown or branched stamp) takes Alembic's own path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, MetaData, column, inspect, select, table

from eventlog._logging import get_logger
from eventlog.errors import SchemaNotCurrent, UnknownSchemaRevision
from eventlog.storage.headschema import create_at_head

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


_REVISION = re.compile(r'^(down_revision|revision)\s*(?::[^=]*)?=\s*(None|"[^"]*"|\'[^\']*\')\s*$',
                       re.MULTILINE)


@cache
def shipped_head() -> str | None:
    """The newest revision of the shipped scripts, read from their ``revision`` and
    ``down_revision`` lines without Alembic; None unless they form one plain line of
    revisions (then only Alembic's answer, `head_revision`, is trusted)."""
    revisions: dict[str, str | None] = {}
    for script in sorted((migrations_dir() / "versions").glob("*.py")):
        found = dict(_REVISION.findall(script.read_text(encoding="utf-8")))
        if set(found) != {"revision", "down_revision"} or found["revision"] == "None":
            return None
        down = found["down_revision"]
        revisions[found["revision"][1:-1]] = None if down == "None" else down[1:-1]
    heads = set(revisions) - {down for down in revisions.values() if down is not None}
    return heads.pop() if len(heads) == 1 else None


def _stamps(connection: Connection, schema: str | None) -> list[str] | None:
    """The database's revision stamps read with SQLAlchemy; None when it has no stamp
    table (a schema no migration ever touched)."""
    if not inspect(connection).has_table(VERSION_TABLE, schema=schema):
        return None
    stamps: Sequence[object] = connection.execute(
        select(column("version_num")).select_from(table(VERSION_TABLE, schema=schema))
    ).scalars().all()
    return [str(stamp) for stamp in stamps]


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
    head = shipped_head()
    if head is not None:
        stamps = _stamps(connection, schema)
        if stamps == [head]:
            return head
        if stamps is None and upgrade and create_at_head(connection, schema, head):
            logger.info("schema_created", schema=schema, revision=head)
            return head
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
    replay(connection, schema, metadata)
    logger.info("schema_upgraded", schema=schema, from_revision=found, to_revision=head)
    return head


def replay(connection: Connection, schema: str | None, metadata: MetaData) -> None:
    """Run every migration the database's stamp has not seen, up to the newest (what a
    schema the shipped head script did not create goes through)."""
    from alembic import command
    command.upgrade(alembic_config(connection, schema, metadata), "head")
