"""What the interrupt store's spans record (`eventlog.telemetry`): the tenant, the batch,
the thread, the generation and the outcome of each decision, never an answer's values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventlog.telemetry import CONVERSATION_ID, AttributeValue


def _kept(described: Mapping[str, object]) -> dict[str, AttributeValue]:
    return {key: value for key, value in described.items()
            if isinstance(value, (str, int)) and not isinstance(value, bool)}


def created(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """``create``: the tenant (its scope) and the thread."""
    return _kept({"eventlog.tenant_id": arguments.get("scope"),
                  CONVERSATION_ID: arguments.get("thread_id")})


def batch_created(batch: Any) -> dict[str, AttributeValue]:
    """``create``'s result: the new batch and how many interrupts it holds."""
    return _kept({"eventlog.batch_id": getattr(batch, "batch_id", None),
                  "eventlog.interrupts": len(getattr(batch, "interrupts", ()))})


def claiming(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """``try_claim``: the tenant (its scope) and the batch the resume input answers."""
    resume = arguments.get("resume_input")
    batch_id = (resume.get("batch_id") if isinstance(resume, Mapping)
                else getattr(resume, "batch_id", None))
    return _kept({"eventlog.tenant_id": arguments.get("scope"), "eventlog.batch_id": batch_id})


def claim_decided(result: Any) -> dict[str, AttributeValue]:
    """``try_claim``'s result: granted or not, and why not."""
    reason = getattr(result, "reason", None)
    claim = getattr(result, "claim", None)
    described: dict[str, AttributeValue] = {"eventlog.claim.granted": claim is not None}
    if reason is not None:
        described["eventlog.claim.rejection"] = str(getattr(reason, "value", reason))
    if claim is not None:
        described["eventlog.claim.generation"] = int(claim.generation)
    return described


def under_claim(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A call under a claim (or a capture handle): its tenant, batch and generation."""
    held = arguments.get("claim", arguments.get("handle"))
    described = _kept({"eventlog.tenant_id": getattr(held, "tenant_id", None),
                       "eventlog.batch_id": getattr(held, "batch_id", None),
                       "eventlog.claim.generation": getattr(held, "generation", None)})
    finish = arguments.get("finish")
    if finish is not None:
        described["eventlog.finish"] = str(getattr(finish, "value", finish))
    return described


def decided(done: Any) -> dict[str, AttributeValue]:
    """A fenced decision's result: whether it took effect (a stale claim's does not)."""
    return {"eventlog.decided": bool(done)} if isinstance(done, bool) else {}


def reconciling(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """``reconcile``: the batch (the actor and the evidence stay out)."""
    return _kept({"eventlog.batch_id": arguments.get("batch_id")})


def recovering(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """``recover``: the tenant and the thread."""
    return _kept({"eventlog.tenant_id": arguments.get("scope"),
                  CONVERSATION_ID: arguments.get("thread_id")})
