"""``simsql db upgrade / downgrade / current / history``: simsql's own database objects (the
registry and its helpers), migrated by the revisions in ``simsql.alembic``.

Revisions print on stdout one per line, so scripts can read them; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from sqlalchemy import Engine

from .common import EXIT_OK, open_engine


def migrations() -> ModuleType:
    """``simsql.alembic``, imported only by the commands that migrate: Alembic adds a fifth
    to the start-up time of every other command."""
    import simsql.alembic

    return simsql.alembic


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        migrations().upgrade(engine, args.revision)
        _print_revisions(migrations().current(engine))
    return EXIT_OK


def cmd_db_downgrade(args: argparse.Namespace) -> int:
    """Refused (SchemaError, exit 1, nothing removed) while tables are attached: see
    :func:`simsql.alembic.downgrade`."""
    with open_engine(args) as engine:
        migrations().downgrade(engine, args.revision)
        remaining = migrations().current(engine)
        _print_revisions(remaining, when_none="simsql's objects are removed: nothing of simsql is left in this database")
    return EXIT_OK


def cmd_db_current(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        _print_revisions(migrations().current(engine))
    return EXIT_OK


def _print_revisions(revisions: Sequence[str], when_none: str = "no simsql revision applied (run `simsql db upgrade`)") -> None:
    """Revisions on stdout, one per line (scriptable); ``when_none`` on stderr when none."""
    for revision in revisions:
        print(revision)
    if not revisions:
        print(when_none, file=sys.stderr)


def cmd_db_history(args: argparse.Namespace) -> int:
    history = migrations().history()
    heads = {revision for revision, _, _ in history} - {down for _, down, _ in history if down}
    for revision, down, message in history:
        head = " (head)" if revision in heads else ""
        summary = message.splitlines()[0] if message else ""
        print(f"{down or '<base>'} -> {revision}{head}, {summary}")
    return EXIT_OK


def ensure_registry(engine: Engine) -> bool:
    """Install simsql's own objects if missing (:func:`simsql.alembic.install`, which
    :func:`simsql.attach_table` calls too); returns whether it had to."""
    return bool(migrations().install(engine))


def add_db_commands(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
    db = commands.add_parser("db", parents=[common], help="install, update or remove simsql's own database objects")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = actions.add_parser("upgrade", parents=[common], help="create or update the registry and helpers")
    upgrade.add_argument("revision", nargs="?", default="heads", help="target revision (default: heads)")
    upgrade.set_defaults(handler=cmd_db_upgrade, parser=upgrade)
    downgrade = actions.add_parser("downgrade", parents=[common], help="remove simsql's objects (default: all)")
    downgrade.add_argument("revision", nargs="?", default="base", help="target revision (default: base)")
    downgrade.set_defaults(handler=cmd_db_downgrade, parser=downgrade)
    current = actions.add_parser("current", parents=[common], help="print the applied simsql revision")
    current.set_defaults(handler=cmd_db_current, parser=current)
    history = actions.add_parser("history", parents=[local], help="list simsql's revisions (no database needed)")
    history.set_defaults(handler=cmd_db_history, parser=history)
