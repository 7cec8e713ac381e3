"""Who may see what: access tokens, each naming the tenants it sees.

Without ``--tokens`` the console makes one random token that sees every tenant (printed at
start, as Jupyter does). ``--tokens FILE`` is TOML, one table per name under ``[tokens]``::

    [tokens.alice]
    token = "a long random string"
    tenants = ["acme", "globex"]

A token is compared in constant time; a browser exchanges it once for a session cookie
holding a random session id (never the token itself). A session lasts `SESSION_TTL_S`
from its login (the cookie's Max-Age says the same): a cookie left on a shared machine
stops working, and the server forgets sessions as they end, so its memory holds only live
ones (at most `MAX_SESSIONS`; past it the oldest is logged out).
"""

from __future__ import annotations

import hmac
import secrets
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from eventlog.cli.errors import EXIT_USAGE, CommandError

MIN_TOKEN_LENGTH = 16
"""A shorter token is refused: it could be guessed."""
ALL_TENANTS = None
"""A `Grant`'s ``tenants`` when it sees every tenant (the printed token)."""
SESSION_TTL_S = 12 * 3600
"""How long a browser session lasts from its login: a working day."""
MAX_SESSIONS = 10_000
"""The most browser sessions held at once."""


@dataclass(frozen=True)
class Grant:
    """One token's name and the tenants it may see (None: every tenant)."""

    name: str
    token: str
    tenants: frozenset[str] | None

    def sees(self, tenant: str) -> bool:
        """Whether this token may see ``tenant``."""
        return self.tenants is None or tenant in self.tenants


class Access:
    """The grants, and the browser sessions they were exchanged for."""

    def __init__(self, grants: list[Grant]) -> None:
        self.grants = grants
        self._sessions: dict[str, tuple[Grant, float]] = {}
        """Session id → (grant, when it ends on the monotonic clock), oldest first."""

    @classmethod
    def random(cls) -> Access:
        """One fresh token that sees every tenant."""
        return cls([Grant("console", secrets.token_urlsafe(32), ALL_TENANTS)])

    def by_token(self, token: str) -> Grant | None:
        """The grant of ``token`` (each compared in constant time), or None."""
        found = None
        for grant in self.grants:
            if hmac.compare_digest(grant.token.encode(), token.encode()):
                found = grant
        return found

    def open_session(self, grant: Grant) -> str:
        """A new browser session for ``grant``, lasting `SESSION_TTL_S`: the cookie's
        value."""
        self._forget_ended()
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        session = secrets.token_urlsafe(32)
        self._sessions[session] = (grant, time.monotonic() + SESSION_TTL_S)
        return session

    def by_session(self, session: str) -> Grant | None:
        """The grant a browser session was opened with, or None (never opened, or
        ended)."""
        found = self._sessions.get(session)
        if found is None or found[1] <= time.monotonic():
            self._forget_ended()
            return None
        return found[0]

    def _forget_ended(self) -> None:
        # Sessions end in the order they began (one lifetime for all): drop from the front.
        now = time.monotonic()
        while self._sessions:
            first = next(iter(self._sessions))
            if self._sessions[first][1] > now:
                return
            del self._sessions[first]


def read_tokens(file: str) -> Access:
    """The grants of a ``--tokens`` file; a one-line `CommandError` naming what is wrong."""
    try:
        data = tomllib.loads(Path(file).read_text(encoding="utf-8"))
    except OSError as error:
        raise CommandError(f"cannot read --tokens {file}: {error.strerror}", EXIT_USAGE) from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CommandError(f"--tokens {file} is not TOML: {error}", EXIT_USAGE) from error
    tables = data.get("tokens")
    if not isinstance(tables, dict) or not tables:
        raise CommandError(f"--tokens {file} has no [tokens.NAME] tables", EXIT_USAGE)
    grants: list[Grant] = []
    seen: set[str] = set()
    for name, table in tables.items():
        where = f"--tokens {file}: [tokens.{name}]"
        if not isinstance(table, dict):
            raise CommandError(f"{where} must be a table", EXIT_USAGE)
        token, tenants = table.get("token"), table.get("tenants")
        if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
            raise CommandError(f"{where} needs token = \"…\" of at least {MIN_TOKEN_LENGTH} "
                               "characters", EXIT_USAGE)
        if token in seen:
            raise CommandError(f"{where} has the token of another name", EXIT_USAGE)
        if (not isinstance(tenants, list) or not tenants
                or not all(isinstance(t, str) and t for t in tenants)):
            raise CommandError(f"{where} must have tenants = [\"…\"], a list of tenant ids",
                               EXIT_USAGE)
        unknown = set(table) - {"token", "tenants"}
        if unknown:
            raise CommandError(f"{where} has unknown keys: {', '.join(sorted(unknown))}",
                               EXIT_USAGE)
        seen.add(token)
        grants.append(Grant(str(name), token, frozenset(tenants)))
    return Access(grants)
