"""The files a command reads whole and the outputs it writes.

Reading: a head, a proof or a key is small, so at most a bound is read and a larger file
(or ``/dev/zero``) is refused once the bound is passed, never read whole.

Writing: a regular file appears whole or not at all. It is written beside its target and
renamed over it, so a reader never sees half of it and a failed run leaves the old file.
Only a regular file (or a new name) is replaced that way: a device (``/dev/null``, a
tape), a FIFO or ``-`` (standard output) is written directly, in place. Renaming over a
device would replace the device node itself with a regular file: as root, ``/dev/null``
became a file that every later ``> /dev/null`` on the machine wrote into.

Nothing here opens a log: the auditor's commands use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from eventlog.cli.console import plural
from eventlog.cli.errors import EXIT_USAGE, CommandError

STDOUT = "-"
"""The output name that means standard output."""


def read_bounded(name: str, what: str, limit: int) -> bytes:
    """The bytes of file ``name`` (a ``what``: "head", "proof"), at most ``limit`` of them;
    a one-line `CommandError` (exit 2) if it cannot be read or is larger."""
    try:
        with Path(name).open("rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise CommandError(f"cannot read {what} {name}: {error.strerror or error}",
                           EXIT_USAGE) from error
    if len(data) > limit:
        raise CommandError(f"{what} {name} is larger than {plural(limit, 'byte')}: not a "
                           f"{what}")
    return data


def read_text(name: str, what: str, limit: int) -> str:
    """`read_bounded`, decoded as UTF-8 (a file that is not is refused, exit 2)."""
    try:
        return read_bounded(name, what, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{what} {name} is not UTF-8 text") from None


def is_written_in_place(output: str) -> bool:
    """Whether ``output`` is written directly rather than renamed into place: standard
    output, or an existing file that is not a regular file (a device, a FIFO)."""
    if output == STDOUT:
        return True
    try:
        mode = os.stat(output).st_mode
    except FileNotFoundError:
        return False
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from error
    if stat.S_ISDIR(mode):
        raise CommandError(f"cannot write {output}: it is a directory")
    return not stat.S_ISREG(mode)


@contextlib.contextmanager
def opened_output(output: str) -> Iterator[IO[bytes]]:
    """A binary handle writing ``output``: standard output for ``-``, the device or FIFO
    itself for one, else a temporary file beside the target renamed over it when the
    block ends without an error (removed when it raises). An ``OSError`` is a one-line
    `CommandError` naming the target (exit 2)."""
    if output == STDOUT:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        if is_written_in_place(output):
            with Path(output).open("wb") as handle:
                yield handle
            return
        # A link to a regular file stays a link: the file it names is replaced.
        target = Path(os.path.realpath(output))
        partial = target.with_name(f".{target.name}.partial")
        try:
            with partial.open("wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from error


def write_output(output: str, data: bytes) -> None:
    """Write ``data`` to ``output`` as `opened_output` does."""
    with opened_output(output) as handle:
        handle.write(data)
