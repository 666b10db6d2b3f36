"""``simsql attach / detach / status``: give a live table fingerprints, take them away, and
report every attached table.

``attach`` checks the table and columns before installing anything, so a typo leaves the
database untouched; it then offers to backfill (asked on a terminal, else told how).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

import simsql
import simsql.lifecycle.catalog
import simsql.lifecycle.tables
import simsql.store.registry
import simsql.text.fingerprint

from ..dialects import backend
from ..schema.names import layout_text
from .backfill import print_backfill_summary, run_backfill
from .common import EXIT_OK, backfill_command, load_background, open_engine, with_background
from .database import ensure_registry, migrations
from .options import backfill_options, format_option, lock_timeout_option, table_options
from .output import write_json, write_records


def rows_to_fingerprint(connection: Connection, table: str, schema: str | None) -> int:
    """Rows a backfill would fingerprint (the library counts them; kept for scripts)."""
    return simsql.lifecycle.tables.pending_rows(connection, table, schema)


def _confirm(question: str) -> bool:
    """``[Y/n]`` on stderr (stdout stays for results); end of input means no."""
    sys.stderr.write(f"{question} [Y/n] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        sys.stderr.write("\n")
        return False
    return answer.strip().lower() in ("", "y", "yes")


def _should_backfill(args: argparse.Namespace, pending: int) -> bool:
    if pending == 0 or args.backfill is False:
        return False
    if args.backfill or args.yes:
        return True
    if sys.stdin.isatty():
        return _confirm(f"Backfill {pending} rows now?")
    return False


def _describe_attachment(entry: Any) -> str:
    names = entry.names
    layout = f", blocks {layout_text(names.layout)}"
    wide = f" with the wide signature ({names.wide_words[0]}..{names.wide_blocks[-1]}{layout})" if names.wide else ""
    if names.side:
        return f"side table {entry.table_schema}.{names.side}{wide}"
    return f"columns {names.fingerprint}, {names.digest}, {names.blocks[0]}..{names.blocks[-1]}{wide}"


def _indexes_message(engine: Engine, args: argparse.Namespace, entry: Any) -> str:
    """What attach says of the block indexes it built, or left to the backfill."""
    if not args.indexes:
        return "no block indexes built (--no-indexes): queries will scan; rerun attach without it to build them"
    with engine.connect() as connection:
        present = simsql.lifecycle.catalog.present(connection, entry.table_schema, entry.table_name, entry.names)
    if not all(present.has_index(name) for name in entry.names.indexes):
        return "block indexes are built when the backfill ends (built once over the filled rows, about half the size)"
    how = " (built online)" if backend(engine).online_index_builds else " (built concurrently)" if args.concurrently else ""
    return f"block indexes ready{how}"


def _offer_backfill(engine: Engine, args: argparse.Namespace) -> None:
    pending = simsql.lifecycle.tables.pending_rows(engine, args.table, args.schema)
    if _should_backfill(args, pending):
        result = run_backfill(
            engine, args.table, args.schema, batch_size=args.batch_size, workers=args.workers, show_progress=True
        )
        print_backfill_summary(result, "text", sys.stdout)
    elif pending:
        command = backfill_command(args.table, args.schema)
        print(f"{pending} rows have no fingerprint yet; fingerprint them with: {command}")


def _attach_configuration(engine: Engine, args: argparse.Namespace) -> tuple[simsql.Fingerprinter | None, bool | None]:
    """(fingerprinter, wide) for attach_table: an attached table keeps its recorded configuration
    unless told otherwise; a new one gets algorithm version 2 (what ``SimHashMixin`` declares)
    unless ``--wide`` asks for version 3 (the wide signature, as ``WideSimHashMixin``)."""
    if args.wide is None and args.background is None:
        with engine.connect() as connection:
            if simsql.store.registry.read(connection, args.table, args.schema) is not None:
                return None, None
    wide = args.wide is True or (args.wide is None and args.wide_blocks is not None)  # --wide-blocks: wide
    if args.background is None:
        return None, wide
    version = simsql.text.fingerprint.WIDE_VERSION if wide else simsql.text.fingerprint.ALGORITHM_VERSION
    return with_background(simsql.Fingerprinter(version=version), load_background(args.background)), wide


def cmd_attach(args: argparse.Namespace) -> int:
    """Validates before installing anything (a typo leaves the database untouched), installs
    simsql's registry if missing, then attaches; a rerun finishes an interrupted attach."""
    with open_engine(args) as engine:
        with engine.connect() as connection:
            simsql.lifecycle.catalog.describe(connection, args.table, args.text_columns, args.schema)
        fingerprinter, wide = _attach_configuration(engine, args)
        if ensure_registry(engine):
            print(f"installed simsql's registry (revision {', '.join(migrations().current(engine))})")
        entry = simsql.attach_table(
            engine, args.table, args.text_columns, schema=args.schema, side_table=args.side_table,
            prefix=args.prefix, indexes=args.indexes, concurrently=args.concurrently, lock_timeout=args.lock_timeout,
            index_lock_timeout=args.index_lock_timeout, fingerprinter=fingerprinter, wide=wide,
            wide_blocks=args.wide_blocks,
        )
        print(f"attached {entry.table_schema}.{entry.table_name} ({_describe_attachment(entry)}; "
              f"text from {', '.join(entry.source)})")
        print(_indexes_message(engine, args, entry))
        _offer_backfill(engine, args)
    return EXIT_OK


def _state_before_detach(engine: Engine, args: argparse.Namespace) -> str | None:
    with engine.connect() as connection:
        entry = simsql.store.registry.read(connection, args.table, args.schema)
        return None if entry is None else simsql.lifecycle.tables.attachment_state(connection, entry)


def cmd_detach(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        state = _state_before_detach(engine, args)
        entry = simsql.detach_table(engine, args.table, schema=args.schema, lock_timeout=args.lock_timeout)
    if state in (simsql.lifecycle.catalog.GONE, simsql.lifecycle.catalog.REPLACED):
        what = "was dropped" if state == simsql.lifecycle.catalog.GONE else "was replaced (without its fingerprints)"
        print(f"{entry.table_schema}.{entry.table_name} {what} outside simsql: cleared its registry entry "
              "and backfill progress")
        return EXIT_OK
    print(f"detached {entry.table_schema}.{entry.table_name}: removed {_describe_attachment(entry)}, "
          "its trigger, indexes and registry entry; the table and its data are as before attach")
    return EXIT_OK


def _lists_record(status: simsql.lifecycle.tables.TableStatus) -> dict[str, object]:
    lists = status.lists
    if lists is None:
        return {"lists": "", "largest_list": "", "median_list": "", "left_behind": "", "recall@10": "", "drift": ""}
    shown = f"{lists.lists}" + ("" if lists.state == "current" else f" ({lists.state})")
    curve = "" if lists.recall is None else " ".join(f"{p}:{r:.2f}" for p, r in zip(lists.recall.grid, lists.recall.recall))
    return {"lists": shown, "largest_list": lists.largest_list, "median_list": lists.median_list,
            "left_behind": lists.rows_left_behind, "recall@10": curve, "drift": lists.drift or ""}  # fmt: skip


def _state_text(status: simsql.lifecycle.tables.TableStatus) -> str:
    return status.state if status.problem is None else f"{status.state}: {status.problem}"


def cmd_status(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        found = simsql.status(engine)
    records = [
        {
            "table": f"{s.schema}.{s.table}", "mode": s.mode, "prefix": s.prefix, "source": ",".join(s.source),
            "config_id": s.config_id, "rows": s.rows, "fingerprinted": s.rows_fingerprinted,
            "missing": s.rows_missing, "no_text": s.rows_no_text, "stale": s.rows_stale, "state": _state_text(s),
        }
        for s in found
    ]
    if any(s.wide for s in found):  # rows whose wide signature a backfill would still write
        records = [{**r, "missing_wide": s.rows_missing_wide} for r, s in zip(records, found)]
    if any(s.lists for s in found):  # partition lists: their drift (largest against median) and rows left behind
        records = [{**r, **_lists_record(s)} for r, s in zip(records, found)]
    if args.format == "json":
        write_json([{**r, "settings": s.settings} for r, s in zip(records, found)], sys.stdout)
    else:
        write_records(args.format, list(records[0]) if records else ["table"], records, sys.stdout)
        if not records:
            print("no table is attached (run `simsql attach --table TABLE --text-column COLUMN`)", file=sys.stderr)
    for s in found:
        if s.state in (simsql.lifecycle.catalog.GONE, simsql.lifecycle.catalog.REPLACED):
            command = shlex.join(["simsql", "detach", "--table", s.table, "--schema", s.schema])
            print(f"{s.schema}.{s.table} was {'dropped' if s.state == 'gone' else 'replaced'} outside simsql; "
                  f"clear its entry with: {command}", file=sys.stderr)
    return EXIT_OK


def add_attach(commands: Any, common: argparse.ArgumentParser) -> None:
    attach = commands.add_parser(
        "attach", parents=[common], help="add fingerprints to an existing table",
        description="Add fingerprint columns (or a side table), their trigger and indexes to a table, "
        "installing simsql's registry first if needed; then offer to backfill existing rows.",
    )
    table_options(attach)
    attach.add_argument(
        "--text-column", dest="text_columns", action="append", required=True, metavar="COLUMN",
        help="a text column to fingerprint; repeat for several (joined by newlines, in this order)",
    )
    attach.add_argument("--side-table", action="store_true", help="keep fingerprints in <table>_simhash; the table is not altered")
    attach.add_argument(
        "--prefix", default="simhash",
        help="name of the fingerprint column, prefix of the others (default: simhash; choose another if "
        "the table already has such a column)",
    )
    attach.add_argument(
        "--wide", action=argparse.BooleanOptionalAction, default=None,
        help="store the wide 256-bit originality signature find_original probes: algorithm version 3, what "
        "WideSimHashMixin declares (its block indexes are built when the backfill ends). Default for a new "
        "attachment: --no-wide, version 2, the 64-bit fingerprint only, what SimHashMixin declares. An attached "
        "table keeps what it has unless this is given",
    )
    attach.add_argument(
        "--wide-blocks", metavar="COUNTxWIDTH", default=None,
        help="how the wide signature is cut into indexed blocks (implies --wide): e.g. 10x24, ten blocks of 24 bits "
        "(each probe of a wider block reads fewer rows; the check makes twice the probes; docs/originality.md says "
        "when it pays). Default: 8x20, or as an attached table records it",
    )
    attach.add_argument("--no-indexes", dest="indexes", action="store_false", help="skip the block indexes")
    attach.add_argument(
        "--background", metavar="FILE",
        help="fingerprint with the default configuration centred on this background (see refingerprint --fit-background)",
    )
    attach.add_argument(
        "--concurrently", action=argparse.BooleanOptionalAction, default=True,
        help="build indexes without blocking writes (default: yes; MySQL/MariaDB always build them online)",
    )
    attach.add_argument(
        "--backfill", action=argparse.BooleanOptionalAction, default=None,
        help="fingerprint existing rows now (default: ask on a terminal, else no)",
    )
    attach.add_argument("-y", "--yes", action="store_true", help="answer yes to questions (backfills)")
    lock_timeout_option(attach)
    attach.add_argument(
        "--index-lock-timeout", default="10min",
        help="longest wait of a concurrent index build for older transactions to end (default: 10min; "
        "PostgreSQL only: on MySQL/MariaDB a waiting ALTER blocks other queries, so --lock-timeout bounds it)",
    )
    backfill_options(attach)
    attach.set_defaults(handler=cmd_attach, parser=attach)


def add_detach(commands: Any, common: argparse.ArgumentParser) -> None:
    detach = commands.add_parser(
        "detach", parents=[common], help="remove everything simsql added to a table",
        description="Drop the fingerprint columns (or side table), trigger, indexes and registry entry of a "
        "table: it is left as it was before attach. Refuses while another object (a view, an index, a "
        "foreign key) depends on them.",
    )
    table_options(detach)
    lock_timeout_option(detach)
    detach.set_defaults(handler=cmd_detach, parser=detach)


def add_status(commands: Any, common: argparse.ArgumentParser) -> None:
    status = commands.add_parser(
        "status", parents=[common],
        help="attached tables: mode, configuration, rows fingerprinted, missing, without words, stale; "
        "tables dropped or replaced outside simsql read as gone/replaced",
    )
    format_option(status, ("table", "json", "csv"))
    status.set_defaults(handler=cmd_status, parser=status)
