"""``simsql refingerprint``: move an attached table to another fingerprint configuration online,
optionally fitting a background on the table's own text first.

An interrupted move leaves the table on its configuration with every finished batch saved; the
same command resumes it, and ``--abandon`` removes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
from typing import Any

from sqlalchemy import Engine

import simsql
import simsql.lifecycle.refingerprinting
import simsql.lifecycle.sampling

from ..dialects import backend
from ..store import registry
from .common import (
    EXIT_OK,
    CommandError,
    Interrupted,
    UsageError,
    load_background,
    open_engine,
    with_background,
)
from .options import backfill_options, lock_timeout_option, non_negative_int, positive_int, table_options
from .progress import interrupt_main_process_only, progress_bar


def _fit_and_save_background(engine: Engine, args: argparse.Namespace, to: simsql.Fingerprinter) -> simsql.Fingerprinter:
    """Fit on a random sample of the table, save before moving anything (a rerun resumes with
    ``--background FILE``), and say how the application uses it."""
    try:
        background = simsql.lifecycle.sampling.fit_background(
            engine, args.table, fingerprinter=to, schema=args.schema, sample=args.sample, wide=args.wide_background
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    try:
        background.save(args.fit_background)
    except OSError as error:
        raise UsageError(f"cannot write {args.fit_background}: {error.strerror or error}") from None
    print(f"fitted a background on {background.documents} texts of {args.table}; saved to {args.fit_background}")
    version = f"version={to.version}, " if to.version != 2 else ""
    print(f"  the application fingerprints with: Fingerprinter({version}background=Background.load({args.fit_background!r}))")
    return with_background(to, background)


def _refuse_mysql_move(engine: Engine, args: argparse.Namespace, to: simsql.Fingerprinter) -> None:
    """MySQL/MariaDB cannot stage a second set of fingerprints yet: unless the move adds the wide
    signature in place (version 2 to 3), say what moves the table there instead (detach, then
    attach with the configuration and backfill)."""
    with engine.connect() as connection:
        entry = registry.read(connection, args.table, args.schema or registry.current_schema(connection))
    if entry is None:
        return  # refingerprint's own error names the missing attachment
    if to.wide and entry.config_id in (dataclasses.replace(to, version=2).config_id, to.config_id):
        return  # version 2 to 3 of the same settings: moved in place there
    columns = " ".join(f"--text-column {shlex.quote(c)}" for c in entry.source)
    table = shlex.quote(args.table) + (f" --schema {shlex.quote(args.schema)}" if args.schema else "")
    background = args.fit_background or args.background
    background_option = f" --background {shlex.quote(background)}" if background else ""
    version_option = " --no-wide" if args.algorithm_version == 2 else ""
    default_settings = args.algorithm_version in (2, 3) and (args.shingle_size, args.chinese, args.weighting, args.seed) == (1, None, None, 0)
    settings_note = "" if default_settings else (
        " (attach uses today's default settings, with or without a background; for others call "
        "simsql.attach_table(..., fingerprinter=...))"
    )
    raise CommandError(
        "MySQL/MariaDB refingerprint a table online only from algorithm version 2 to version 3 of the same settings; "
        "move it offline instead (queries find nothing until the backfill ends): simsql detach --table "
        f"{table} && simsql attach --table {table} {columns}{version_option}{background_option} --backfill{settings_note}"
    )


def cmd_refingerprint(args: argparse.Namespace) -> int:
    try:
        to = simsql.Fingerprinter(
            shingle_size=args.shingle_size, chinese=args.chinese, weighting=args.weighting, seed=args.seed,
            version=args.algorithm_version,
        )
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.background is not None:
        to = with_background(to, load_background(args.background))
    if args.fit_background is not None and os.path.exists(args.fit_background):
        raise UsageError(
            f"{args.fit_background} exists; to resume or repeat a move with that background pass --background "
            f"{args.fit_background}, or remove the file to fit a new one"
        )
    command = f"simsql refingerprint --table {args.table}" + (f" --schema {args.schema}" if args.schema else "")
    with open_engine(args) as engine:
        if args.fit_background is not None and not args.abandon:
            to = _fit_and_save_background(engine, args, to)
        if not backend(engine).refingerprints_online and not args.abandon:
            _refuse_mysql_move(engine, args, to)
        try:
            with interrupt_main_process_only(), progress_bar(args.table, args.progress and not args.abandon) as progress:
                result = simsql.lifecycle.refingerprinting.refingerprint(
                    engine, args.table, to=to, schema=args.schema, batch_size=args.batch_size, workers=args.workers,
                    progress=progress, lock_timeout=args.lock_timeout, abandon=args.abandon, wide_blocks=args.wide_blocks,
                )
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted; the table still uses its configuration and every finished batch is saved. Run `{command}` "
                "again to resume"
            ) from None
    where = f"{result.schema}.{result.table}"
    if args.abandon:
        print(f"abandoned any unfinished refingerprint of {where}; it keeps {result.from_config}")
    elif not result.switched:
        print(f"{where} already uses {result.to_config}: nothing to do")
    else:
        resumed = " (resumed an interrupted run)" if result.resumed else ""
        print(f"{where} moved from {result.from_config} to {result.to_config}: {result.rows_fingerprinted} rows "
              f"fingerprinted ({result.rows_at_switch} at the switch, table locked for writes "
              f"{result.switch_seconds:.2f} s) in {result.seconds:.1f} s{resumed}")
        if args.wide_blocks:
            print(f"  its wide signature is cut into blocks of {args.wide_blocks}")
    return EXIT_OK


def add_refingerprint(commands: Any, common: argparse.ArgumentParser) -> None:
    refingerprint = commands.add_parser(
        "refingerprint", parents=[common], help="move a table to another fingerprint configuration, online",
        description="Fingerprint every row again with the new configuration into a second set of columns (or "
        "side table) while the table stays in use with its current one, then switch both in one short "
        "transaction. Interrupt it at any time: running it again resumes.",
    )
    table_options(refingerprint)
    refingerprint.add_argument(
        "--algorithm-version", type=int, choices=(1, 2, 3), default=3, dest="algorithm_version",
        help="fingerprint algorithm of the new configuration (default: 3, version 2 plus the wide originality "
        "signature, what attach --wide and WideSimHashMixin create; a version 2 table of the same settings moves to it in place on MySQL/MariaDB)",
    )
    refingerprint.add_argument("--shingle-size", type=positive_int, default=1, help="words per shingle (default: 1)")
    refingerprint.add_argument("--chinese", choices=("jieba", "bigrams"), default=None, help="default: the version's")
    refingerprint.add_argument(
        "--weighting", choices=("prior", "log", "count", "jieba_idf"), default=None, help="default: the version's",
    )
    refingerprint.add_argument("--seed", type=non_negative_int, default=0)
    centring = refingerprint.add_mutually_exclusive_group()
    centring.add_argument(
        "--background", metavar="FILE", help="centre bits on this background (saved by --fit-background or Background.save)",
    )
    centring.add_argument(
        "--fit-background", metavar="FILE",
        help="fit a background on a random sample of the table's text, save it to FILE (which must not exist), then "
        "move the table to it: balanced bits for this table's own vocabulary",
    )
    refingerprint.add_argument(
        "--sample", type=positive_int, default=simsql.lifecycle.sampling.DEFAULT_SAMPLE,
        help=f"texts read by --fit-background (default: {simsql.lifecycle.sampling.DEFAULT_SAMPLE})",
    )
    refingerprint.add_argument(
        "--wide-background", action="store_true",
        help="with --fit-background: centre the whole 256-bit wide signature, not only the 64-bit fingerprint "
        "(a faster originality check on a large table; whole-table dedupe then reaches fewer edited copies: docs/originality.md)",
    )
    refingerprint.add_argument(
        "--wide-blocks", metavar="COUNTxWIDTH", default=None,
        help="the wide signature's block layout after the move, e.g. 10x24 (default: the table's own); with the table's own "
        "configuration this moves the blocks alone (PostgreSQL)",
    )
    refingerprint.add_argument(
        "--abandon", action="store_true", help="remove an unfinished refingerprint instead (the table keeps its configuration)",
    )
    backfill_options(refingerprint)
    lock_timeout_option(refingerprint)
    refingerprint.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    refingerprint.set_defaults(handler=cmd_refingerprint, parser=refingerprint)
