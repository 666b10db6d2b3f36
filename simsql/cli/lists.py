"""``simsql lists fit|place|drop``: partition lists for "most similar" on large tables."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..lists import drop_lists, fit_lists, place_lists
from .common import EXIT_OK, UsageError, open_engine
from .options import table_options
from .progress import progress_bar


def add_partitions(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "lists", help="partition lists: an index for 'most similar' when neighbours are far",
        description="Fit partition lists on an attached table (centres from a random sample, every row placed "
        "in its nearest list; online), place rows left behind, or drop them. Queries then take probes=N.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    fit = actions.add_parser("fit", parents=[common], help="fit (or refit) the lists and place every row")
    table_options(fit)
    fit.add_argument("--lists", type=int, default=None, help="number of lists (default: rows/1000, sqrt(rows) past 1M)")
    fit.add_argument("--sample", type=int, default=None, help="rows sampled to fit them (default: 50 a list, >= 10,000)")
    fit.add_argument("--seed", type=int, default=0, help="seed of the sample and the first centres")
    fit.set_defaults(handler=cmd_fit, parser=fit)
    place = actions.add_parser("place", parents=[common], help="place the rows no list holds (raw writes, changed text)")
    table_options(place)
    place.set_defaults(handler=cmd_place, parser=place)
    drop = actions.add_parser("drop", parents=[common], help="remove the lists (and the column and index a fit added)")
    table_options(drop)
    drop.set_defaults(handler=cmd_drop, parser=drop)


def cmd_fit(args: argparse.Namespace) -> int:
    try:
        return _fit(args)
    except (TypeError, ValueError) as error:  # lists/sample/seed out of range, a table without rows
        raise UsageError(str(error)) from None


def _fit(args: argparse.Namespace) -> int:
    with open_engine(args) as engine, progress_bar(f"{args.table}: placing", sys.stderr.isatty()) as bar:
        result = fit_lists(
            engine, args.table, schema=args.schema, lists=args.lists, sample=args.sample, seed=args.seed,
            progress=None if bar is None else (lambda phase, done, total: bar(done, total) if phase == "place" else None),
        )  # fmt: skip
    print(
        f"fitted {result.lists} lists on {result.schema}.{result.table} (generation {result.generation}, "
        f"sample of {result.sample_rows} rows, {result.fit_seconds:.1f} s); placed {result.rows_placed} rows in "
        f"{result.place_seconds:.1f} s; largest list {result.largest_list} rows, median {result.median_list}"
        + (f"; {result.left_behind} rows left behind (run `simsql lists place`)" if result.left_behind else "")
        + (f"; rebuilt online the indexes its writes grew: {', '.join(result.rebuilt)}" if result.rebuilt else "")
    )
    if result.recall is not None:
        curve = ", ".join(f"{p}: {r:.3f}" for p, r in zip(result.recall.grid, result.recall.recall))
        print(f"recall@10 by probes ({result.recall.queries} held-out rows): {curve}")
    return EXIT_OK


def cmd_place(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        placed = place_lists(engine, args.table, schema=args.schema)
    print(f"placed {placed} rows of {args.table}")
    return EXIT_OK


def cmd_drop(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        dropped = drop_lists(engine, args.table, schema=args.schema)
    print(f"dropped the lists of {args.table}" if dropped else f"{args.table} has no lists")
    return EXIT_OK
