"""The embedded server's one exception, and the excerpt of a tool's output its messages quote.

The lowest module of :mod:`simsql.embedded`: every other one raises this class.
"""

from __future__ import annotations

from ..text.errors import SimsqlError

__all__ = ["EmbeddedPostgresUnavailable", "tail"]


class EmbeddedPostgresUnavailable(SimsqlError, RuntimeError):
    """The embedded PostgreSQL could not be provided; the message says why and what to do.

    One class for every cause, because callers (the test fixture, ``simsql demo``) can only
    react one way: report it, or fall back to asking for a database URL.
    """


def tail(text: str | None, lines: int = 15) -> str:
    """The last ``lines`` lines of a tool's output or log, for an error message; never empty."""
    return "\n".join((text or "").strip().splitlines()[-lines:]) or "(no output)"
