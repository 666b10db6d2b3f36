"""``simsql demo``: the guided tour, on an embedded PostgreSQL or an explicit ``--url`` only
(PostgreSQL or MySQL/MariaDB)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import EXIT_OK, URL_VARIABLES, CommandError, normalise_url, supported_engine
from .options import positive_int


def cmd_demo(args: argparse.Namespace) -> int:
    """Only an explicit ``--url`` is used: the demo creates tables, and must not do so in
    whatever database ``DATABASE_URL`` happens to point at."""
    try:
        from ..demo import run_demo  # type: ignore[import-not-found, unused-ignore]
    except ImportError as error:
        raise CommandError(f"the demo is not available in this installation ({error})") from None
    explicit = getattr(args, "url", None)
    if explicit:
        supported_engine(normalise_url(explicit)).dispose()  # refused before anything is created
    url = normalise_url(explicit).render_as_string(hide_password=False) if explicit else None
    run_demo(url, out=sys.stdout, limit=getattr(args, "limit", None))
    return EXIT_OK


def add_demo(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
    demo = commands.add_parser(
        "demo", parents=[local], help="a guided tour on demo data",
        description="Runs on --url if given, else on an embedded PostgreSQL that simsql starts itself. "
        f"{' and '.join(URL_VARIABLES)} are not read, so the demo never writes into your application's "
        "database by accident.",
    )
    demo.add_argument(
        "--url", default=argparse.SUPPRESS,
        help="PostgreSQL or MySQL/MariaDB URL to run the demo on, in a schema (MySQL: database) of its own "
        "(default: the embedded PostgreSQL)",
    )
    demo.add_argument("--limit", type=positive_int, default=None, help="articles to load (default: all)")
    demo.set_defaults(handler=cmd_demo, parser=demo)
