"""The ``simsql`` command line: attach, backfill and query tables without writing Python.

This is the only package of simsql that talks to a terminal: the library raises and logs,
the command line turns that into messages, progress bars and exit codes.

Exit codes: 0 success, 1 a runtime error (``simsql: error: ...`` on stderr, no traceback),
2 a usage error (bad arguments, no database URL), 130 interrupted by Ctrl-C.

The database URL comes from ``--url``, else ``SIMSQL_DATABASE_URL``, else ``DATABASE_URL``;
plain ``postgresql://`` URLs are accepted and run on psycopg 3, plain ``mysql://`` and
``mariadb://`` ones on PyMySQL (``pip install simsql[mysql]``).

One module per command group, each holding its commands and their arguments: ``database``
(``db ...``), ``tables`` (attach, detach, status), ``backfill``, ``refingerprint``, ``queries``
(similar, dupes), ``fingerprint`` and ``demo``; beneath them ``common`` (exit codes, errors,
URL and engine), ``options`` (shared arguments), ``output`` (JSON, CSV, tables) and ``progress``.
This module wires the parser and maps errors to exit codes; the names it imports stay reachable
as ``simsql.cli.<name>``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from sqlalchemy.exc import DBAPIError

import simsql

from ..text.errors import SimsqlError
from .backfill import add_backfill, cmd_backfill, print_backfill_summary, run_backfill
from .common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    URL_VARIABLES,
    CommandError,
    Interrupted,
    UsageError,
    database_message,
    log,
    normalise_url,
    open_engine,
    resolve_url,
)
from .database import (
    add_db_commands,
    cmd_db_current,
    cmd_db_downgrade,
    cmd_db_history,
    cmd_db_upgrade,
)
from .demo import add_demo, cmd_demo
from .fingerprint import add_fingerprint, cmd_fingerprint
from .lists import add_partitions
from .options import common_options
from .output import PREVIEW_CHARS, read_text, write_csv, write_json, write_records, write_table
from .queries import add_dupes, add_similar, cmd_dupes, cmd_similar
from .refingerprint import add_refingerprint, cmd_refingerprint
from .tables import add_attach, add_detach, add_status, cmd_attach, cmd_detach, cmd_status, rows_to_fingerprint
from .vector_index import add_vector_index_commands

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PREVIEW_CHARS",
    "URL_VARIABLES",
    "CommandError",
    "Interrupted",
    "UsageError",
    "build_parser",
    "cmd_attach",
    "cmd_backfill",
    "cmd_db_current",
    "cmd_db_downgrade",
    "cmd_db_history",
    "cmd_db_upgrade",
    "cmd_demo",
    "cmd_detach",
    "cmd_dupes",
    "cmd_fingerprint",
    "cmd_refingerprint",
    "cmd_similar",
    "cmd_status",
    "log",
    "main",
    "normalise_url",
    "open_engine",
    "print_backfill_summary",
    "read_text",
    "resolve_url",
    "rows_to_fingerprint",
    "run_backfill",
    "write_csv",
    "write_json",
    "write_records",
    "write_table",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simsql",
        parents=[common_options(suppress=False)],
        description="SimHash near-duplicate detection inside PostgreSQL and MySQL/MariaDB.",
        epilog="Exit codes: 0 ok, 1 error, 2 usage error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"simsql {simsql.__version__}")
    common = common_options(suppress=True)
    local = common_options(suppress=True, url=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_db_commands(commands, common, local)
    for add in (add_attach, add_detach, add_status, add_backfill, add_refingerprint, add_partitions, add_vector_index_commands, add_similar, add_dupes):
        add(commands, common)
    add_fingerprint(commands, common, local)  # no database: no --url
    add_demo(commands, common, local)  # a --url of its own, no environment
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbosity < 2:
        logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # one line per plugin


def _error(message: str) -> None:
    print(f"simsql: error: {message}", file=sys.stderr)


NAMES = ("table", "schema", "text_columns", "prefix", "columns")
"""The arguments that name database objects: a name must be text a driver can send."""


def undecodable_name(args: argparse.Namespace) -> str | None:
    """Why an argument naming a database object cannot be sent, or None. A shell passes bytes
    that are not UTF-8 (``$'t\xff'``) as lone surrogates, which no driver encodes."""
    for dest in NAMES:
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    shown = item.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                    option = "--text-column" if dest == "text_columns" else f"--{dest}"
                    return f"argument {option}: {shown!r} is not valid UTF-8 (the shell passed bytes that no database name can hold)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    undecodable = undecodable_name(args)
    if undecodable is not None:
        getattr(args, "parser", parser).error(undecodable)
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except UsageError as error:
        getattr(args, "parser", parser).print_usage(sys.stderr)
        _error(str(error))
        return EXIT_USAGE
    except (SimsqlError, CommandError) as error:
        _error(str(error))
        return EXIT_ERROR
    except DBAPIError as error:
        _error(database_message(error))
        return EXIT_ERROR
    except Interrupted as interruption:
        print(f"simsql: {interruption}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("simsql: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`simsql similar ... | head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
