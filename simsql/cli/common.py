"""What every command of the ``simsql`` command line shares: exit codes, the three errors the
entry point turns into messages, the database URL and engine, and a background read from a file.

The errors carry the words the user reads; :func:`simsql.cli.main` maps each to its exit code,
so a command only raises and never prints an error or exits itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError

import simsql

from ..dialects import backend
from ..schema import urls
from ..text.background import Background
from ..text.errors import ConfigMismatch, UnsupportedDatabase

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

URL_VARIABLES = ("SIMSQL_DATABASE_URL", "DATABASE_URL")

log = logging.getLogger("simsql.cli")


class CommandError(Exception):
    """A runtime failure the user can act on: printed without a traceback, exit 1."""


class UsageError(Exception):
    """The command line itself is wrong: printed like argparse errors, exit 2."""


class Interrupted(Exception):
    """Ctrl-C, carrying what the user should know about the state left behind."""


def normalise_url(raw: str) -> URL:
    """The library's :func:`simsql.schema.urls.normalise_url`, with a bad URL as a usage error."""
    try:
        return urls.normalise_url(raw)
    except ArgumentError as error:
        raise UsageError(f"invalid database URL: {error}") from None


EMBEDDED = "embedded"
"""The URL word for the embedded PostgreSQL (``--url embedded``, ``DATABASE_URL=embedded``): the
server the README's examples and ``simsql demo`` run on when no URL is given, started if needed."""


def resolve_url(explicit: str | None, environ: Mapping[str, str] = os.environ) -> URL:
    """``--url``, else the first of :data:`URL_VARIABLES` set; none is a usage error. The word
    :data:`EMBEDDED` stands for the embedded PostgreSQL's URL."""
    for candidate in (explicit, *(environ.get(name) for name in URL_VARIABLES)):
        if candidate == EMBEDDED:
            from ..embedded import embedded_url  # the [embedded] extra: imported only when asked for

            return normalise_url(embedded_url())
        if candidate:
            return normalise_url(candidate)
    raise UsageError(
        f"no database URL: pass --url or set {' or '.join(URL_VARIABLES)} "
        f"(--url {EMBEDDED}: the embedded PostgreSQL the README's examples and `simsql demo` use)"
    )


@contextmanager
def open_engine(args: argparse.Namespace) -> Iterator[Engine]:
    """An engine on the command's database, disposed on the way out; a URL no dialect reads is
    a usage error, before any connection is tried."""
    url = resolve_url(getattr(args, "url", None))
    log.info("database: %s", url.render_as_string(hide_password=True))
    engine = supported_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def supported_engine(url: URL) -> Engine:
    """An engine on ``url``, not connected yet; a URL no dialect reads, or a server simsql
    does not run on (``sqlite:///x``), is a usage error before any connection is tried, so
    nothing is created (SQLite would create the file)."""
    try:
        engine = urls.engine_for(url)  # an asyncio or missing driver: a SimsqlError naming the ones that work
    except ArgumentError as error:  # unknown dialect or driver
        raise UsageError(f"invalid database URL: {error}") from None
    try:
        backend(engine.dialect)
    except UnsupportedDatabase as error:
        engine.dispose()
        raise UsageError(str(error)) from None
    return engine


def database_message(error: DBAPIError) -> str:
    """The driver's own words (e.g. "connection refused"), without SQLAlchemy's SQL dump and
    documentation link, which say nothing to someone at a terminal."""
    message = str(error.orig).strip() if error.orig is not None else str(error).strip()
    return message or type(error).__name__


def backfill_command(table: str, schema: str | None) -> str:
    """The command to print as advice, quoted so it can be pasted into a shell as is."""
    words = ["simsql", "backfill", "--table", table, *(["--schema", schema] if schema else [])]
    return " ".join(shlex.quote(word) for word in words)


def load_background(path: str) -> Background:
    """``--background FILE``; a missing or malformed file is a usage error naming it."""
    try:
        return Background.load(path)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def with_background(fingerprinter: simsql.Fingerprinter, background: Background) -> simsql.Fingerprinter:
    """``fingerprinter`` centred on ``background``; a background fitted with other settings is a
    usage error that says which options must match."""
    try:
        return dataclasses.replace(fingerprinter, background=background)
    except ConfigMismatch as error:
        raise UsageError(f"{error} (pass the same --algorithm-version/--shingle-size/--chinese/--weighting/--seed it was fitted with)") from None
