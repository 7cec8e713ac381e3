"""Adapters that plug the event log into workflow frameworks.

Each adapter is a module of its own with its framework as an optional dependency:
`eventlog.adapters.langgraph` (``pip install "checkpoint-eventlog[langgraph]"``) and
`eventlog.adapters.maf`, Microsoft Agent Framework (``pip install "checkpoint-eventlog[maf]"``).
A LangGraph thread id and an Agent Framework workflow name share the tenant's thread names:
the second framework to use one is refused with `FrameworkConflict`.
"""

from eventlog.errors import FrameworkConflict

__all__ = ["FrameworkConflict"]
