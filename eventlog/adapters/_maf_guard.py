"""Agent Framework checkpoint documents checked before Agent Framework decodes them.

MAF's checkpoint encoding is JSON whose non-JSON values are pickles
(``{"__pickled__": base64, "__type__": …}``), decoded by its restricted unpickler. That
unpickler allows ``bytearray``, ``bytes`` and ``range``, so a pickle of 46 bytes can make it
allocate 16 GiB (``bytearray(2**34)``), and it sizes its memo by whatever index a PUT names.
`check_document` walks the document (without recursion) and each pickle in it with our own
opcode walker (`check_pickle`, which calls nothing) and refuses, before MAF sees it, a
document nested deeper than `MAX_DOCUMENT_DEPTH` (MAF decodes it recursively) or a pickle
past its budgets (`PastBudget`). What MAF would refuse on its own (a marker that is not
base64, a type it does not allow) is left to MAF and its own message.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from eventlog.adapters._safe_pickle import PastBudget, check_pickle
from eventlog.adapters._safe_values import Unreadable

__all__ = ["MAX_DOCUMENT_DEPTH", "check_document", "read_document"]

MAX_DOCUMENT_DEPTH = 200
"""The deepest nesting of lists and objects a checkpoint document may have (MAF encodes
and decodes it recursively, two frames a level)."""

_PICKLED, _TYPE = "__pickled__", "__type__"


def read_document(data: bytes | str) -> Any:
    """The JSON document of a checkpoint, checked (`check_document`); `Unreadable` when it
    is not JSON or is past a budget."""
    try:
        document = json.loads(data)
    except RecursionError as error:
        raise PastBudget(f"the {MAX_DOCUMENT_DEPTH} levels a checkpoint document may nest "
                         "(MAX_DOCUMENT_DEPTH)", "JSON nested too deep to read") from error
    except ValueError as error:
        raise Unreadable(f"not JSON ({error})") from error
    check_document(document)
    return document


def check_document(document: Any) -> None:
    """Refuse (`Unreadable`, `PastBudget`) a checkpoint document nested deeper than
    `MAX_DOCUMENT_DEPTH` or holding a pickle past `check_pickle`'s budgets."""
    todo: list[tuple[Any, int]] = [(document, 0)]
    while todo:
        value, depth = todo.pop()
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_DOCUMENT_DEPTH:
            raise PastBudget(f"the {MAX_DOCUMENT_DEPTH} levels a checkpoint document may nest "
                             "(MAX_DOCUMENT_DEPTH)", "lists or objects nested deeper")
        if isinstance(value, list):
            todo.extend((item, depth + 1) for item in value)
        elif _PICKLED in value and _TYPE in value:
            _check_pickled(value[_PICKLED])
        else:
            todo.extend((item, depth + 1) for item in value.values())


def _check_pickled(encoded: Any) -> None:
    """One pickled value, as MAF would decode it (base64 of a string); one MAF cannot
    decode is left for MAF to refuse."""
    if not isinstance(encoded, str):
        return
    try:
        data = base64.b64decode(encoded.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return
    try:
        check_pickle(data)
    except PastBudget as error:
        raise PastBudget(error.budget, f"a pickled value of {len(data):,} bytes: "
                                       f"{error.detail}") from error
    except Unreadable as error:
        raise Unreadable(f"a pickled value of {len(data):,} bytes is refused before decoding "
                         f"({error}): an unpickler may allocate what a length says before "
                         "it finds the bytes missing") from error
