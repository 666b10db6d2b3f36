"""``simsql backfill``: fingerprint the rows of an attached table that have none yet, in batches
committed one by one, so an interrupted run resumes after its last finished batch.

:func:`run_backfill` is also what ``attach --backfill`` runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from sqlalchemy import Engine

import simsql

from .common import EXIT_OK, Interrupted, backfill_command, open_engine
from .options import backfill_options, format_option, lock_timeout_option, table_options
from .output import write_json
from .progress import interrupt_main_process_only, progress_bar


def run_backfill(
    engine: Engine,
    table: str,
    schema: str | None,
    *,
    batch_size: int,
    workers: int | None,
    show_progress: bool,
    lock_timeout: str | None = "5s",
) -> simsql.BackfillResult:
    try:
        with interrupt_main_process_only(), progress_bar(table, show_progress) as progress:
            return simsql.backfill(
                engine, table, schema=schema, batch_size=batch_size, workers=workers, progress=progress,
                lock_timeout=lock_timeout,
            )
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted; every finished batch is saved. "
            f"Run `{backfill_command(table, schema)}` again to resume where it stopped"
        ) from None


def print_backfill_summary(result: simsql.BackfillResult, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        write_json(
            {
                "rows_read": result.rows_read,
                "rows_fingerprinted": result.rows_fingerprinted,
                "rows_empty": result.rows_empty,
                "rows_skipped_changed": result.rows_skipped_changed,
                "batches": result.batches,
                "seconds": round(result.seconds, 3),
                "rows_per_second": round(result.rows_per_second, 1),
                "resumed": result.resumed,
            },
            out,
        )
        return
    resumed = " (resumed an interrupted run)" if result.resumed else ""
    out.write(
        f"fingerprinted {result.rows_fingerprinted} rows, {result.rows_empty} without words (left NULL), "
        f"in {result.seconds:.1f} s ({result.rows_per_second:,.0f} rows/s){resumed}\n"
    )
    if result.indexes_built:
        out.write(f"built {len(result.indexes_built)} block indexes over the filled rows\n")
    if result.rows_skipped_changed:
        out.write(
            f"{result.rows_skipped_changed} rows changed while being read and were left for their writer "
            "or the next run\n"
        )


def cmd_backfill(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        result = run_backfill(
            engine,
            args.table,
            args.schema,
            batch_size=args.batch_size,
            workers=args.workers,
            show_progress=args.progress,
            lock_timeout=args.lock_timeout,
        )
    print_backfill_summary(result, args.format, sys.stdout)
    return EXIT_OK


def add_backfill(commands: Any, common: argparse.ArgumentParser) -> None:
    backfill = commands.add_parser(
        "backfill", parents=[common], help="fingerprint rows that have none yet (resumable)",
        description="Fingerprint every row lacking a fingerprint, in batches committed one by one. "
        "Interrupt it at any time: running it again resumes after the last finished batch.",
    )
    table_options(backfill)
    backfill_options(backfill)
    lock_timeout_option(backfill)
    backfill.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    format_option(backfill, ("text", "json"))
    backfill.set_defaults(handler=cmd_backfill, parser=backfill)
