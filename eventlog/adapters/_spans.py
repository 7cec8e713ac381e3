"""What the adapters' spans record (`eventlog.telemetry`): the thread as the GenAI
conventions' ``gen_ai.conversation.id`` (so LangSmith, Langfuse, Phoenix or Honeycomb line
the saver's calls up with the agent's own spans), the namespace and checkpoint ids, and
counts, never a state value, a write's value or metadata. Our own attributes are under
``eventlog.`` (``langgraph.`` and ``agent_framework.`` are those frameworks' to name):
``eventlog.checkpoint.namespace``, ``eventlog.checkpoint.id``, ``eventlog.task.id``,
``eventlog.writes``, ``eventlog.threads``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventlog.telemetry import CONVERSATION_ID, AttributeValue


def _kept(described: Mapping[str, object]) -> dict[str, AttributeValue]:
    return {key: value for key, value in described.items() if isinstance(value, str)}


def langgraph_config(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A LangGraph call's config: its thread, namespace and checkpoint; a write's task and
    how many writes it carries."""
    config = arguments.get("config")
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping):
        return {}
    thread_id = configurable.get("thread_id")
    described = _kept({
        CONVERSATION_ID: None if thread_id is None else str(thread_id),
        "eventlog.checkpoint.namespace": configurable.get("checkpoint_ns"),
        "eventlog.checkpoint.id": configurable.get("checkpoint_id"),
        "eventlog.task.id": arguments.get("task_id"),
    })
    writes = arguments.get("writes")
    if isinstance(writes, (list, tuple)):
        described["eventlog.writes"] = len(writes)
    return described


def langgraph_thread(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A LangGraph call naming a thread (delete, or the source of a copy)."""
    thread_id = arguments.get("thread_id", arguments.get("source_thread_id"))
    return {} if thread_id is None else {CONVERSATION_ID: str(thread_id)}


def langgraph_threads(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A LangGraph call over many threads (prune): how many, and the thread when one."""
    threads = arguments.get("thread_ids")
    if not isinstance(threads, (list, tuple)):
        return {}
    described: dict[str, AttributeValue] = {"eventlog.threads": len(threads)}
    if len(threads) == 1:
        described[CONVERSATION_ID] = str(threads[0])
    return described


def maf_checkpoint(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """An Agent Framework call: the workflow (its thread) and the checkpoint."""
    checkpoint = arguments.get("checkpoint")
    return _kept({
        CONVERSATION_ID: getattr(checkpoint, "workflow_name", arguments.get("workflow_name")),
        "eventlog.checkpoint.id": getattr(checkpoint, "checkpoint_id",
                                                 arguments.get("checkpoint_id")),
    })
