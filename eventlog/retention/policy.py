"""Retention policy files: one policy per tenant, for ``eventlog retention apply --policy``.

A JSON or TOML file (by its suffix: ``.toml`` is TOML, anything else JSON) holding one
table ``tenants``, each tenant's policy with ``older_than_days`` and/or ``keep_latest``::

    [tenants.acme]
    older_than_days = 180
    keep_latest = 10

    [tenants.globex]
    keep_latest = 3

Every error is an `InvalidInput` whose field is the path in the file
(``tenants.acme.keep_latest``), raised before any tenant is touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eventlog.errors import InvalidInput
from eventlog.retention.decisions import RetentionPolicy, check_policy
from eventlog.validation import check_id

_FIELDS = ("older_than_days", "keep_latest")


def load_policies(path: str | Path) -> dict[str, RetentionPolicy]:
    """Each tenant's policy in the file at ``path``, in the file's order."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput("policy", f"cannot read {str(source)!r}: {error}") from None
    return parse_policies(text, toml=source.suffix.lower() == ".toml")


def parse_policies(text: str, *, toml: bool = False) -> dict[str, RetentionPolicy]:
    """Each tenant's policy in a policy file's text (JSON, or TOML with ``toml``)."""
    try:
        if toml:
            import tomllib

            document: Any = tomllib.loads(text)
        else:
            document = json.loads(text)
    except ValueError as error:
        raise InvalidInput("policy", f"is not valid {'TOML' if toml else 'JSON'}: "
                                     f"{error}") from None
    if not isinstance(document, dict):
        raise InvalidInput("policy", "must be a table with one key, tenants")
    extra = sorted(set(document) - {"tenants"})
    if extra:
        raise InvalidInput(extra[0], "is not a policy file key (the only one is tenants)")
    tenants = document.get("tenants")
    if not isinstance(tenants, dict) or not tenants:
        raise InvalidInput("tenants", "must be a table of at least one tenant's policy")
    return {_tenant(name): _policy(name, fields) for name, fields in tenants.items()}


def _tenant(name: str) -> str:
    try:
        return check_id("tenant_id", name)
    except InvalidInput as error:
        raise InvalidInput(f"tenants.{name!r}", error.reason) from None


def _policy(tenant: str, fields: Any) -> RetentionPolicy:
    where = f"tenants.{tenant}"
    if not isinstance(fields, dict):
        raise InvalidInput(where, "must be a table with older_than_days and/or keep_latest")
    extra = sorted(set(fields) - set(_FIELDS))
    if extra:
        raise InvalidInput(f"{where}.{extra[0]}", "is not a policy field (use "
                                                  "older_than_days, keep_latest)")
    try:
        return check_policy(fields.get("older_than_days"), fields.get("keep_latest"))
    except InvalidInput as error:
        if error.field == "policy":
            raise InvalidInput(where, "give older_than_days, keep_latest or both") from None
        field = "older_than_days" if error.field == "older_than" else error.field
        raise InvalidInput(f"{where}.{field}", error.reason) from None
