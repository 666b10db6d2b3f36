"""``simsql vector-index add|drop``: pgvector's HNSW index on an attached vector table, so
"most similar by meaning" ranks with pgvector where it runs (:mod:`simsql.lifecycle.vector_index`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..lifecycle import add_vector_index, drop_vector_index
from .common import EXIT_OK, UsageError, open_engine
from .options import positive_int, table_options


def add_vector_index_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "vector-index", help="pgvector's HNSW index on a vector table (PostgreSQL with pgvector)",
        description="Build pgvector's HNSW index (cosine) on an attached vector table's column, online "
        "(CREATE INDEX CONCURRENTLY), or drop it. most_similar_vectors then ranks with pgvector. simsql never "
        "creates the extension: run CREATE EXTENSION vector first.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", parents=[common], help="build the HNSW index (kept if it is there and valid)")
    table_options(add)
    add.add_argument("--m", type=positive_int, default=16, help="pgvector's m: links per node, 2-100 (default: 16)")
    add.add_argument(
        "--ef-construction", type=positive_int, default=64, help="pgvector's ef_construction, 4-1000, >= 2*m (default: 64)"
    )
    add.set_defaults(handler=cmd_vector_index_add, parser=add)
    drop = actions.add_parser("drop", parents=[common], help="drop the HNSW index simsql built (no other index)")
    table_options(drop)
    drop.set_defaults(handler=cmd_vector_index_drop, parser=drop)


def cmd_vector_index_add(args: argparse.Namespace) -> int:
    try:
        with open_engine(args) as engine:
            built = add_vector_index(engine, args.table, schema=args.schema, m=args.m, ef_construction=args.ef_construction)
    except ValueError as error:  # m or ef_construction out of pgvector's bounds
        raise UsageError(str(error)) from None
    print(f"built the HNSW index of {args.table}" if built else f"{args.table} already has its HNSW index")
    return EXIT_OK


def cmd_vector_index_drop(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        dropped = drop_vector_index(engine, args.table, schema=args.schema)
    print(f"dropped the HNSW index of {args.table}" if dropped else f"{args.table} has no HNSW index of simsql's")
    return EXIT_OK
