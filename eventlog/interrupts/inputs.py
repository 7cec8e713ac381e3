"""Input checks for the interrupt store: a clear error naming the field, nothing written.

Shapes are checked here (types, ids, sizes, schemas); whether an answer fits its batch is
a decision (`eventlog.interrupts.decisions`), reported as a rejection, not an error.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from eventlog.checkpoints.decisions import check_session_id
from eventlog.cursors import MAX_POSITION, is_number
from eventlog.errors import CapacityExceeded as CapacityExceeded  # defined with every error
from eventlog.errors import InvalidInput, PayloadTooLarge
from eventlog.interrupts.models import (
    BatchState,
    CaptureHandle,
    CaptureOutcome,
    Interrupt,
    InterruptClaim,
    InterruptOptions,
    Operation,
    Reconciliation,
    Resume,
    ResumeInput,
)
from eventlog.interrupts.schema import check_schema
from eventlog.validation import check_id, check_json_value, check_positive_limit

MAX_SCOPES = 1000
MAX_PAGE = 1000

_encoder = msgspec.json.Encoder()


def check_scopes(scopes: Any) -> tuple[str, ...]:
    """The permitted tenants (``scopes``) as a tuple; empty, a bare string, or too many are
    refused."""
    if isinstance(scopes, str) or not isinstance(scopes, Iterable):
        raise InvalidInput("scopes", "must be a collection of tenant ids, not a single string")
    checked = tuple(sorted({check_id("scopes", tenant_id) for tenant_id in scopes}))
    if not checked:
        raise InvalidInput("scopes", "must name at least one permitted tenant")
    if len(checked) > MAX_SCOPES:
        raise InvalidInput("scopes", f"names {len(checked)} tenants, the maximum is {MAX_SCOPES}")
    return checked


def check_operation(operation: Any) -> Operation:
    """An `Operation` (or a ``(name, version)`` pair) with valid parts."""
    if isinstance(operation, tuple) and len(operation) == 2:
        operation = Operation(*operation)
    if not isinstance(operation, Operation):
        raise InvalidInput("operation", "must be an Operation(name, version)")
    check_id("operation.name", operation.name)
    check_id("operation.version", operation.version)
    return operation


def check_interrupts(
    interrupts: Any, options: InterruptOptions, now: datetime
) -> tuple[Interrupt, ...]:
    """A non-empty batch of distinct, well-formed, unexpired interrupts (times in UTC)."""
    if not isinstance(interrupts, list | tuple) or not interrupts:
        raise InvalidInput("interrupts", "must be a non-empty list of Interrupt")
    if len(interrupts) > options.max_interrupts:
        raise InvalidInput(
            "interrupts", f"has {len(interrupts)} entries, the maximum is {options.max_interrupts}"
        )
    checked = tuple(
        _check_interrupt(f"interrupts[{n}]", item, options, now)
        for n, item in enumerate(interrupts)
    )
    ids = [interrupt.id for interrupt in checked]
    repeated = next((i for i in ids if ids.count(i) > 1), None)
    if repeated is not None:
        raise InvalidInput("interrupts", f"interrupt id {repeated!r} appears more than once")
    return checked


def _check_interrupt(
    field: str, item: Any, options: InterruptOptions, now: datetime
) -> Interrupt:
    if not isinstance(item, Interrupt):
        raise InvalidInput(field, f"must be an Interrupt, not {type(item).__name__}")
    check_id(f"{field}.id", item.id)
    check_id(f"{field}.reason", item.reason)
    _check_optional_str(f"{field}.message", item.message)
    if item.message is not None:
        check_json(f"{field}.message", item.message, options)
    if item.tool_call_id is not None:
        check_id(f"{field}.tool_call_id", item.tool_call_id)
    if item.response_schema is not None:
        check_json_object(f"{field}.response_schema", item.response_schema, options)
        problem = check_schema(item.response_schema)
        if problem is not None:
            raise InvalidInput(f"{field}.response_schema", problem)
    if item.metadata is not None:
        check_json_object(f"{field}.metadata", item.metadata, options)
    expires_at = item.expires_at
    if expires_at is not None:
        expires_at = check_aware(f"{field}.expires_at", expires_at)
        if expires_at <= now:
            raise InvalidInput(f"{field}.expires_at", "is already in the past")
    return msgspec.structs.replace(item, expires_at=expires_at)


def check_aware(field: str, value: Any) -> datetime:
    """An aware datetime, normalised to UTC."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidInput(field, f"must be an aware datetime, not {value!r}")
    return value.astimezone(UTC)


def check_json(field: str, value: Any, options: InterruptOptions) -> bytes:
    """``value`` encoded as JSON within the size and depth limits, without NaN or
    ±Infinity (which would be stored as null), and holding only what JSON gives back as
    it was given (no tuple, set, datetime, UUID, non-str key…: `check_json_value`)."""
    check_json_value(field, value, plain=True)
    try:
        encoded = _encoder.encode(value)
    except RecursionError:
        raise InvalidInput(field, "nests too deeply to encode") from None
    except (TypeError, ValueError, OverflowError) as error:
        raise InvalidInput(field, f"must be JSON-serializable: {error}") from None
    if len(encoded) > options.max_payload_bytes:
        raise PayloadTooLarge(field, len(encoded), options.max_payload_bytes)
    return encoded


def check_json_object(field: str, value: Any, options: InterruptOptions) -> dict[str, Any]:
    """A JSON object (dict with string keys) within the size limit."""
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise InvalidInput(field, "must be a JSON object (a dict with string keys)")
    check_json(field, value, options)
    return value


def check_resume_input(resume: Any, options: InterruptOptions) -> ResumeInput:
    """A well-formed resume input: ids, statuses, JSON payloads within the size limit."""
    if not isinstance(resume, ResumeInput):
        raise InvalidInput("resume_input", f"must be a ResumeInput, not {type(resume).__name__}")
    check_id("resume_input.thread_id", resume.thread_id)
    check_id("resume_input.batch_id", resume.batch_id)
    if not isinstance(resume.responses, list | tuple):
        raise InvalidInput("resume_input.responses", "must be a list of Resume")
    if len(resume.responses) > options.max_interrupts:
        raise InvalidInput("resume_input.responses", "has more entries than a batch can have")
    for n, response in enumerate(resume.responses):
        _check_resume(f"resume_input.responses[{n}]", response, options)
    return msgspec.structs.replace(resume, responses=tuple(resume.responses))


def _check_resume(field: str, response: Any, options: InterruptOptions) -> None:
    if not isinstance(response, Resume):
        raise InvalidInput(field, f"must be a Resume, not {type(response).__name__}")
    check_id(f"{field}.interrupt_id", response.interrupt_id)
    if response.status not in ("resolved", "cancelled"):
        raise InvalidInput(f"{field}.status", f"must be resolved or cancelled, not "
                                              f"{response.status!r}")
    check_json(f"{field}.payload", response.payload, options)
    if response.metadata is not None:
        check_json_object(f"{field}.metadata", response.metadata, options)


def check_thread_id(thread_id: Any) -> str:
    """A thread id: the checkpoint session it resumes, so at most 247 characters."""
    return check_session_id(thread_id, "thread_id")


def check_claim(claim: Any) -> InterruptClaim:
    """An `InterruptClaim` handed out by this store (its fields checked too)."""
    if not isinstance(claim, InterruptClaim):
        raise InvalidInput("claim", f"must be an InterruptClaim, not {type(claim).__name__}")
    _check_authority("claim", claim.tenant_id, claim.batch_id, claim.generation, claim.token)
    return claim


def check_handle(handle: Any) -> CaptureHandle:
    """A `CaptureHandle` handed out by this store (its fields checked too)."""
    if not isinstance(handle, CaptureHandle):
        raise InvalidInput("handle", f"must be a CaptureHandle, not {type(handle).__name__}")
    _check_authority("handle", handle.tenant_id, handle.batch_id, handle.generation, handle.token)
    check_id("handle.capture_id", handle.capture_id)
    return handle


def _check_authority(
    field: str, tenant_id: Any, batch_id: Any, generation: Any, token: Any
) -> None:
    check_id(f"{field}.tenant_id", tenant_id)
    check_id(f"{field}.batch_id", batch_id)
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise InvalidInput(f"{field}.generation", f"must be a whole number ≥ 0, not {generation!r}")
    if not isinstance(token, str) or not token:
        raise InvalidInput(f"{field}.token", "must be the token string this store handed out")


def check_outcome(outcome: Any) -> CaptureOutcome:
    """A terminal capture outcome (``completed``, ``failed`` or ``cancelled``)."""
    try:
        return CaptureOutcome(outcome)
    except ValueError:
        allowed = ", ".join(o.value for o in CaptureOutcome)
        raise InvalidInput("outcome", f"must be one of {allowed}, not {outcome!r}") from None


def check_snapshot(snapshot: Any, options: InterruptOptions) -> str | None:
    """A capture snapshot: None or a string within the size limit."""
    if snapshot is None:
        return None
    if not isinstance(snapshot, str):
        raise InvalidInput("snapshot", f"must be a string or None, not {type(snapshot).__name__}")
    size = len(snapshot.encode())
    if size > options.max_payload_bytes:
        raise PayloadTooLarge("snapshot", size, options.max_payload_bytes)
    return snapshot


def check_reconciliation(value: Any, options: InterruptOptions) -> Reconciliation:
    """A `Reconciliation` with a known resolution and JSON evidence."""
    if not isinstance(value, Reconciliation):
        raise InvalidInput("reconciliation", "must be a Reconciliation")
    if value.resolution not in ("effect_applied", "effect_not_applied", "abandoned"):
        raise InvalidInput("reconciliation.resolution", f"unknown resolution {value.resolution!r}")
    check_json_object("reconciliation.evidence", value.evidence, options)
    _check_optional_str("reconciliation.note", value.note)
    if value.note is not None:
        check_json("reconciliation.note", value.note, options)
    version = value.expected_version
    if version is not None:
        check_positive_limit("reconciliation.expected_version", version)
    return value


def check_state(state: Any) -> BatchState | None:
    """None, or a known batch state."""
    if state is None:
        return None
    try:
        return BatchState(state)
    except ValueError:
        allowed = ", ".join(s.value for s in BatchState)
        raise InvalidInput("state", f"must be one of {allowed}, not {state!r}") from None


def check_limit(limit: Any) -> int:
    """A page size from 1 to `MAX_PAGE`."""
    return check_positive_limit("limit", limit, maximum=MAX_PAGE)


def encode_cursor(kind: str, value: int) -> str:
    """An opaque cursor standing after ``value``."""
    return base64.urlsafe_b64encode(f"{kind}1:{value}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: Any) -> int | None:
    """The value a cursor of ``kind`` stands after (None for no cursor)."""
    if cursor is None:
        return None
    if not isinstance(cursor, str):
        raise InvalidInput("cursor", f"must be a cursor string, not {type(cursor).__name__}")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raw = ""
    prefix, _, number = raw.partition(":")
    if prefix != f"{kind}1" or not is_number(number, MAX_POSITION):
        raise InvalidInput("cursor", "is not a cursor this call returned")
    return int(number)


def _check_optional_str(field: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(field, f"must be a string or None, not {type(value).__name__}")

