"""JSON Schema for interrupt answers: the `jsonschema` library, its references kept local.

A schema is checked when its batch is created (`check_schema`): against its dialect's
meta-schema (``$schema`` when it names one, else Draft 2020-12), and every ``$ref`` must
resolve inside the schema itself (``$defs``, anchors, embedded ``$id`` resources). Nothing
is ever fetched: the registry the validator uses has no ``retrieve``, so a reference to
another document (``https://…``, ``other.json``) is refused when the batch is created,
naming where it sits, instead of being looked up on the network (jsonschema's default
registry would fetch it, with a warning) or failing later, at every answer.

An answer is checked against it (`validate`) with format assertion on: ``email``,
``date-time``, ``uri`` and every other format of the specification are checked
(jsonschema's non-GPL checkers; ``iri`` and ``iri-reference`` by `eventlog.interrupts.iri`,
see `eventlog.interrupts._jsonschema`); a format the specification does not
define (OpenAPI's ``int32``, ``binary``…) is an annotation, as the specification says.
Keywords the dialect does not define are annotations too (``x-…`` extensions, OpenAPI's
``nullable``).

Both return None or one message that names where the problem is: a JSON pointer into the
schema (``#/properties/x/minLength: …``) or a path into the value (``payload.items[2]:
…``), the most relevant error when there are several (`jsonschema.exceptions.best_match`).

jsonschema is imported when the first schema is checked, not with this module: a process
whose batches carry no schema never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder(order="sorted")


def check_schema(schema: Any) -> str | None:
    """None when ``schema`` is a valid schema of its dialect whose references all resolve
    within it; else what is wrong, at a JSON pointer into the schema (``#/…``).

    Checking against the 2020-12 meta-schema takes jsonschema about 2 ms, so the answer is
    kept for the last schemas checked (an application creates batches with the same few)."""
    if not isinstance(schema, Mapping | bool):
        return "#: a schema must be an object or a boolean"
    try:
        encoded = _encoder.encode(schema)
    except (TypeError, msgspec.EncodeError) as error:
        return f"#: a schema must be JSON: {error}"
    from eventlog.interrupts import _jsonschema  # the first schema loads jsonschema

    return _jsonschema.checked(encoded)


def validate(value: Any, schema: Any, path: str = "$") -> str | None:
    """None when ``value`` satisfies ``schema`` (one `check_schema` accepted); else the
    most relevant violation, at ``path`` followed by where in the value (``.name``,
    ``[index]``)."""
    from eventlog.interrupts import _jsonschema  # the first schema loads jsonschema

    return _jsonschema.violation(value, _encoder.encode(schema), path)
