"""``python manage.py simsql ...``: simsql's command line on a database of ``DATABASES``.

Every subcommand of the ``simsql`` command (``status``, ``backfill``, ``similar``, ``dupes``,
``attach``, ``detach``, ``refingerprint``, ``lists ...``, ``vector-index ...``, ``db ...``) with
its own options, on the database ``--database`` names (``default`` unless given): the URL is
built from its settings (:func:`simsql.django.connection.url_for`) and handed to
:func:`simsql.cli.main`, so the output, progress bars and exit codes are the command line's own. The command line is a program of its
own, with its connections (a backfill's workers) and commits: inside an atomic block of that
database (``call_command`` in a ``TestCase``, say) it refuses, before doing anything.
"""

from __future__ import annotations

import argparse
from contextlib import redirect_stdout
from typing import Any

from django.core.management.base import BaseCommand, CommandError

import simsql.cli

from ... import connection


def split_database(arguments: list[str], default: str) -> tuple[str, list[str]]:
    """(alias, the other arguments): ``--database NAME`` / ``--database=NAME`` may come anywhere."""
    alias, rest = default, []
    words = iter(arguments)
    for word in words:
        if word == "--database":
            alias = next(words, alias)
        elif word.startswith("--database="):
            alias = word.split("=", 1)[1]
        else:
            rest.append(word)
    return alias, rest


class Command(BaseCommand):
    help = "simsql's command line (status, backfill, similar, dupes, attach, detach, refingerprint, lists, vector-index) on a Django database."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--database", default="default", help="the DATABASES alias to work on (default: default)")
        parser.add_argument("simsql_arguments", nargs=argparse.REMAINDER, help="a simsql command and its options, e.g. status")

    def handle(self, *args: Any, **options: Any) -> None:
        alias, arguments = split_database(list(options["simsql_arguments"]), options["database"])
        if not arguments:
            arguments = ["--help"]
        try:
            connection.refuse_in_atomic(
                alias, f"manage.py simsql {arguments[0]}",
                "call it outside the block (in a TransactionTestCase rather than a TestCase), or use the queryset "
                "methods, which run inside it",
            )  # fmt: skip
        except connection.InsideAtomicBlock as error:
            raise CommandError(str(error)) from None
        url = connection.url_for(alias).render_as_string(hide_password=False)
        ending, self.stdout.ending = self.stdout.ending, ""
        try:
            with redirect_stdout(self.stdout):
                code = simsql.cli.main(["--url", url, *arguments])
        finally:
            self.stdout.ending = ending
        if code:
            raise CommandError(f"simsql {arguments[0]} failed (exit status {code})", returncode=code)
