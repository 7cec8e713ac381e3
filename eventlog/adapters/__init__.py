"""Adapters that plug the event log into workflow frameworks.

Each adapter is a module of its own with its framework as an optional dependency:
`eventlog.adapters.langgraph` (``pip install "checkpoint-eventlog[langgraph]"``) and
`eventlog.adapters.maf`, Microsoft Agent Framework (``pip install "checkpoint-eventlog[maf]"``).
A LangGraph thread id and an Agent Framework workflow name share the tenant's thread names:
the second framework to use one is refused with `FrameworkConflict`.
"""

from eventlog.errors import FrameworkConflict

DEFAULT_TENANT = "default"
"""The tenant the adapters read and write when ``tenant_id`` is left out (LangGraph's own
savers have no tenants, so a drop-in replacement must not require one); ``eventlog stats``
and the report mark it (docs/decisions/adapters.md, the adapters' default tenant)."""

__all__ = ["DEFAULT_TENANT", "FrameworkConflict"]
