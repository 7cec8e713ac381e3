"""Agent Framework checkpoints read as supersteps: executors, messages, requests, state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventlog.cli.sealed import unread_reason
from eventlog.cli.thread_story.model import AGENT_FRAMEWORK, Change, Question, Step
from eventlog.cli.thread_story.values import Undecoded, decode, short
from eventlog.events.threads import ThreadCheckpointPut
from eventlog.records import RecordedEvent

INTERNAL = "internal:"
"""MAF's prefix for the workflow's own sources (the run's input, a human's response)."""


def _field(item: Any, *names: str) -> Any:
    for name in names:
        value = getattr(item, name, None)
        if value is not None:
            return value
    return None


def _kind(message: Any) -> str:
    kind = _field(message, "type")
    args = getattr(kind, "args", None)
    return str(args[0]) if isinstance(args, list) and args else str(kind or "standard")


class WorkflowReader:
    """Folds one workflow's checkpoints into supersteps and requests for a human."""

    def __init__(self, payloads: Mapping[bytes, bytes]) -> None:
        self.payloads = payloads
        self.documents: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, Question] = {}

    def step(self, event: RecordedEvent, put: ThreadCheckpointPut,
             questions: list[Question]) -> Step:
        """The superstep a checkpoint records; new requests are added to ``questions``."""
        data = self.payloads.get(bytes.fromhex(put.state_digest))
        document = decode(put.state_encoding, data) if data is not None else Undecoded(
            0, unread_reason(self.payloads, bytes.fromhex(put.state_digest),
                             "purged or not read"))
        document = document if isinstance(document, dict) else {}
        parent = self.documents.get(put.parent_id or "", {})
        self.documents[put.checkpoint_id] = document
        found = Step(
            position=event.position, recorded_at=event.recorded_at,
            framework=AGENT_FRAMEWORK, namespace=put.namespace,
            checkpoint_id=put.checkpoint_id, parent_id=put.parent_id, step=put.step,
            source="superstep",
            values={key: document.get(key) for key in
                    ("messages", "pending_request_info_events", "state") if key in document},
        )
        messages = _messages(document)
        found.messages = [_message_line(m) for m in messages]
        found.nodes = _ran(_messages(parent), messages, document, parent)
        before = _state(parent)
        found.changed = [Change(key, value) for key, value in _state(document).items()
                         if before.get(key, _MISSING) != value
                         and not (key not in before and value in ({}, None))]
        for request_id, request in requests_pending(document).items():
            asker = str(_field(request, "_source_executor_id", "source_executor_id") or "?")
            found.requests.append(f"{request_id} from {asker}: "
                                  f"{short(_field(request, 'data'))}")
            if request_id not in self.pending:
                question = Question(position=event.position, namespace=put.namespace,
                                    checkpoint_id=put.checkpoint_id, node=asker,
                                    value=_field(request, "data"), ask_id=request_id)
                self.pending[request_id] = question
                questions.append(question)
        self._answers(event, messages)
        return found

    def _answers(self, event: RecordedEvent, messages: list[Any]) -> None:
        for message in messages:
            if _kind(message) != "response":
                continue
            original = _field(message, "original_request_info_event")
            request_id = str(_field(original, "_request_id", "request_id") or "")
            question = self.pending.get(request_id)
            if question is not None and not question.answered:
                question.answered, question.answer = True, _field(message, "data")
                question.answer_position, question.answered_by = event.position, event.actor


_MISSING = object()


def _messages(document: Mapping[str, Any]) -> list[Any]:
    found = document.get("messages") or {}
    return [m for items in found.values() for m in items] if isinstance(found, dict) else []


def requests_pending(document: Mapping[str, Any]) -> dict[str, Any]:
    """A workflow checkpoint's requests for information not yet answered, by request id."""
    found = document.get("pending_request_info_events") or {}
    return found if isinstance(found, dict) else {}


def _state(document: Mapping[str, Any]) -> dict[str, Any]:
    """The shared state and each executor's own state, by key."""
    state = document.get("state") or {}
    if not isinstance(state, dict):
        return {}
    flat = {key: value for key, value in state.items()
            if not key.startswith("_") or key == "_executor_state"}
    executors = flat.pop("_executor_state", {}) or {}
    if isinstance(executors, dict):
        flat.update({f"{name} (executor state)": value for name, value in executors.items()})
    return flat


def _message_line(message: Any) -> str:
    source = str(_field(message, "source_id") or "?")
    target = _field(message, "target_id")
    data = short(_field(message, "data"))
    kind = _kind(message)
    if source.startswith(INTERNAL):
        what = "answer" if kind == "response" else "input"
        return f"{what} → {target or source.removeprefix(INTERNAL)}: {data}"
    return f"{source} → {target or 'its edges'}: {data}"


def _ran(before: list[Any], after: list[Any], document: Mapping[str, Any],
         parent: Mapping[str, Any]) -> list[str]:
    """The executors that ran in the superstep: those the parent's messages were
    addressed to, those that sent this checkpoint's messages or raised its new requests."""
    ran: list[str] = []
    for message in before:
        target = _field(message, "target_id")
        if target:
            ran.append(str(target))
    for message in after:
        source = str(_field(message, "source_id") or "")
        if source and not source.startswith(INTERNAL):
            ran.append(source)
    for request_id, request in requests_pending(document).items():
        if request_id not in requests_pending(parent):
            ran.append(str(_field(request, "_source_executor_id", "source_executor_id")))
    return list(dict.fromkeys(ran))
