"""Which framework's adapter holds a thread, so that another one is refused.

LangGraph thread ids and Agent Framework workflow names share the tenant's thread names
(both are the stream ``thread:<name>``). A thread written by one adapter is refused to the
other with `FrameworkConflict`, on the first write and on any read that meets a checkpoint
of the other kind: never the other framework's own decoding error. A thread's framework is
told by its checkpoints' payload label: Agent Framework's is `MAF_ENCODING`, anything else
(LangGraph's serde types: ``msgpack``, ``json``, …) is LangGraph's. This module imports
neither framework.
"""

from __future__ import annotations

from eventlog.errors import FrameworkConflict
from eventlog.log import EventLog
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS

LANGGRAPH = "LangGraph"
MAF = "Agent Framework"
MAF_ENCODING = "maf-checkpoint+json"
"""The payload label of a checkpoint in Agent Framework's checkpoint encoding."""


def framework_of(encoding: str) -> str:
    """The framework whose adapter writes checkpoints with this payload label."""
    return MAF if encoding == MAF_ENCODING else LANGGRAPH


def refuse_foreign(tenant_id: str, thread_id: str, encoding: str, caller: str) -> None:
    """Raise `FrameworkConflict` when a checkpoint with this label is another framework's."""
    holder = framework_of(encoding)
    if holder != caller:
        raise FrameworkConflict(tenant_id, thread_id, holder, caller)


class ThreadClaims:
    """One adapter's check that the threads it writes are not another framework's.

    A thread is looked at once per adapter object (one index seek for one of its rows):
    once it is found free or its own, later writes cost nothing.
    """

    def __init__(self, log: EventLog, tenant_id: str, caller: str) -> None:
        self._log = log
        self._tenant_id = tenant_id
        self._caller = caller
        self._checked: set[str] = set()

    async def check(self, thread_id: str, *, remember: bool = True) -> None:
        """Raise `FrameworkConflict` if the thread holds another framework's checkpoints."""
        if thread_id in self._checked:
            return
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS, {"tenant_id": self._tenant_id, "thread_id": thread_id},
            limit=1, columns=("state_encoding",),
        ))
        for row in rows:
            refuse_foreign(self._tenant_id, thread_id, row["state_encoding"], self._caller)
        if remember:
            self._checked.add(thread_id)
