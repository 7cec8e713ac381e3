"""Thread puts stored compact (issue 41, writing each fact once): no schema change, a
stamp.

From this revision a thread put whose channels' versions are each the one its
``versions`` names for that channel (every LangGraph put) is stored without them,
``"versions_named": true`` saying so (`ThreadCheckpointPut.stored_body`; a version its
``versions`` repeats is written once, ``version_list`` and ``versions_at``), and fields at
their defaults are left out of the thread events (an empty namespace, base or element
list): a LangGraph put's event is ~22 % smaller. Events are never rewritten, so the
older puts stay as they were, and both forms read back the same. The LangGraph adapter,
likewise, stores a compact put's state without its ``channel_versions`` (the put's own
versions, which a read puts back): the code before this revision would read those
checkpoints without them.

Why a revision: the code before it reads a compact put's channels as content-addressed
(the digest as the version) and would misread them; a schema at a revision it does not
know it refuses to open. The downgrade refuses while any compact put is stored (the
older code could not read it, and events are never rewritten); a log without one
downgrades.

Revision ID: 0032_compact_puts
Revises: 0031_runs_index_partial
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0032_compact_puts"
down_revision = "0031_runs_index_partial"
branch_labels = None
depends_on = None

MARKER = b'"versions_named":true'
"""What a compact put's stored bytes hold (sealed or not: the flag is never sealed)."""


def upgrade() -> None:
    """Nothing to change: new puts are written compact from now on."""


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    events = sa.table("events", sa.column("type"), sa.column("data"), sa.column("position"),
                      schema=schema)
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        found = sa.func.position(sa.literal(MARKER, sa.LargeBinary).op("IN")(events.c.data))
    else:
        found = sa.func.instr(events.c.data, sa.literal(MARKER, sa.LargeBinary))
    first = bind.execute(
        sa.select(events.c.position).where(events.c.type == "thread_checkpoint_put",
                                           found > 0).limit(1)).first()
    if first is not None:
        raise RuntimeError(
            "cannot downgrade below 0032_compact_puts: the log holds thread puts stored "
            f"compact (the first at position {first[0]}), which the older code would "
            "misread, and events are never rewritten")
