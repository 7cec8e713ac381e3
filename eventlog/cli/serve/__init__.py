"""``eventlog serve``: a read-only, tenant-scoped investigation console over the log.

`access` holds who may see what, `find` the list of a tenant's sessions, threads and
batches, `app` the ASGI application (Starlette, Jinja2 templates from ``templates/``,
assets from ``static/``). Imported only when the command runs: it needs the ``[serve]``
extra, which neither the library nor any other command loads.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from eventlog.cli.console import plural
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, EXIT_USAGE, CommandError
from eventlog.log import EventLog

__all__ = ["run"]

SHUTDOWN_S = 3
"""How long an interrupted console waits for open pages (a live feed never ends by
itself) before it closes them."""
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
"""Hosts that listen on this machine alone: the console then answers only these names."""


async def run(context: Context) -> int:
    """Open the log, print where to go and the token, serve until interrupted."""
    try:
        import uvicorn

        from eventlog.cli.serve.app import build_app
    except ImportError as error:
        raise CommandError(
            f"eventlog serve needs the [serve] extra ({error.name} is not installed): "
            "pip install 'checkpoint-eventlog[serve]'", EXIT_USAGE) from error
    from eventlog.cli.serve.access import Access, read_tokens

    args = context.args
    access = read_tokens(args.tokens) if args.tokens else Access.random()
    heads = _heads(args.head)
    async with context.open() as log:

        @asynccontextmanager
        async def opened() -> AsyncIterator[EventLog]:
            yield log

        # Starlette's host check cuts the Host header at its first ":", so a bracketed
        # IPv6 name ("[::1]:8421") never matches: on ::1 the check is left off.
        loopback = args.host in LOOPBACK and ":" not in args.host
        app = build_app(opened, access, heads, context.shown_url(),
                        hosts=sorted(LOOPBACK - {"::1"}) if loopback else None)
        server = uvicorn.Server(uvicorn.Config(
            app, host=args.host, port=args.port, log_level="warning", access_log=False,
            lifespan="on", timeout_graceful_shutdown=SHUTDOWN_S))
        host = f"[{args.host}]" if ":" in args.host else args.host
        where = f"http://{host}:{args.port}"
        if args.tokens:
            context.err.print(f"serving {context.shown_url()} read-only at {where} "
                              f"({plural(len(access.grants), 'token')} from {args.tokens})")
        else:
            sys.stderr.write(f"serving {context.shown_url()} read-only at {where}\n"
                             f"open {where}/login?token={access.grants[0].token}\n"
                             f"(or send Authorization: Bearer {access.grants[0].token})\n")
            sys.stderr.flush()
        await server.serve()
    return EXIT_OK


def _heads(files: list[str]) -> dict[str, Any]:
    """Each tenant's signed head, from ``--head`` files (one per tenant)."""
    from eventlog.cli.transparency import read_head

    heads: dict[str, Any] = {}
    for file in files:
        head = read_head(file)
        if head.tenant_id in heads:
            raise CommandError(f"--head {file}: a second head of tenant {head.tenant_id!r}",
                               EXIT_USAGE)
        heads[head.tenant_id] = head
    return heads
