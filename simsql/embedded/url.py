"""How to reach the embedded server: the superuser, the database and the SQLAlchemy URL.

Both are ``postgres`` with trust authentication (whoever reaches the socket is trusted), which
is why the server listens on a Unix socket in a 0700 directory and never on a network address.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from .errors import EmbeddedPostgresUnavailable

__all__ = ["DATABASE", "SUPERUSER", "server_url"]

SUPERUSER = "postgres"
DATABASE = "postgres"


def server_url(socket_dir: Path | None, host: str | None, port: int) -> str:
    """A ``postgresql+psycopg://`` URL for the server: through its socket directory when it has
    one (POSIX), else through ``host`` (127.0.0.1 for none or ``*``) and ``port`` (Windows)."""
    if socket_dir is not None:
        if "," in str(socket_dir):
            # libpq reads a comma in host as a list of hosts; it cannot be escaped.
            raise EmbeddedPostgresUnavailable(
                f"The socket directory {socket_dir} contains a comma, which libpq cannot "
                "connect through. Use a data directory whose path has no comma."
            )
        # The port is explicit so that a PGPORT in the environment cannot redirect libpq
        # to a socket name this server does not use.
        query = f"host={quote(str(socket_dir), safe='/')}&port={port}"
        return f"postgresql+psycopg://{SUPERUSER}@/{DATABASE}?{query}"
    host = host if host and host != "*" else "127.0.0.1"
    return f"postgresql+psycopg://{SUPERUSER}@{host}:{port}/{DATABASE}"
