"""``simsql similar / dupes``: the query commands, on a table reflected at run time (no model
class needed).

Both bound their statements with a 5 s lock timeout, so a query behind another session's
exclusive lock fails with a message instead of hanging.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import and_, cast, inspect, literal, select
from sqlalchemy.orm import Mapper, Session
from sqlalchemy.types import Text

import simsql
import simsql.lifecycle.apply
import simsql.store.storage

from ..text.errors import EmptyDocument
from .common import EXIT_OK, CommandError, UsageError, open_engine
from .options import distance_up_to, format_option, positive_int, table_options
from .output import flat, preview, read_text, write_csv, write_json, write_records, write_table


def _key(values: Sequence[Any]) -> Any:
    return values[0] if len(values) == 1 else list(values)


def _mapper(model: type) -> Mapper[Any]:
    mapper: Mapper[Any] = inspect(model)
    return mapper


def _fetch_row(session: Session, model: type, raw: str) -> object:
    """The row named by ``--id``. Values are cast by PostgreSQL to the key's own type, so
    integer, text and UUID keys all work; composite keys take comma-separated values."""
    keys = list(_mapper(model).primary_key)
    values = raw.split(",") if len(keys) > 1 else [raw]
    if len(values) != len(keys):
        names = ", ".join(k.name for k in keys)
        raise CommandError(f"the key is ({names}): pass --id as {len(keys)} comma-separated values")
    condition = and_(*(key == cast(literal(value, Text()), key.type) for key, value in zip(keys, values)))
    row = session.execute(select(model).where(condition)).scalars().first()
    if row is None:
        raise CommandError(f"no row with {', '.join(k.name for k in keys)} = {raw} in {_mapper(model).local_table.description}")
    return row


def _target(args: argparse.Namespace, session: Session, model: type) -> object:
    if args.id is not None:
        return _fetch_row(session, model, args.id)
    if args.file is not None:
        return read_text(args.file)
    return args.text


def _column_getter(model: type, names: Sequence[str]) -> Callable[[object, str], Any]:
    mapper = _mapper(model)
    table = mapper.local_table
    unknown = [n for n in names if n not in table.c]
    if unknown:
        raise CommandError(
            f"{table.description} has no column {', '.join(map(repr, unknown))} (columns: {', '.join(table.c.keys())})"
        )
    properties = {n: mapper.get_property_by_column(table.c[n]).key for n in names}
    return lambda instance, name: getattr(instance, properties[name])


def _parse_columns(raw: str | None) -> list[str]:
    if raw is None:
        return []
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise UsageError("--columns needs at least one column name")
    clashes = {"distance", "similarity"} & set(names)
    if clashes:
        raise UsageError(f"--columns cannot include {', '.join(sorted(clashes))}: those are computed and always shown")
    return names


def _similar_statement(args: argparse.Namespace, session: Session, model: type) -> Any:
    target = _target(args, session, model)
    try:
        return simsql.most_similar(select(model), target, limit=args.limit, max_distance=args.max_distance)
    except EmptyDocument:
        if args.id is None:
            raise
        # The library names the reflected class; the user knows the table and the id.
        raise CommandError(f"row {args.id} of {args.table} has no text to compare with") from None


def _bound_queries(session: Session) -> None:
    """A query behind another session's exclusive lock fails after 5 s instead of hanging."""
    simsql.lifecycle.apply.set_timeouts(session.connection(), simsql.lifecycle.apply.Timeouts("5s", None))


def cmd_similar(args: argparse.Namespace) -> int:
    columns = _parse_columns(args.columns)
    with open_engine(args) as engine, Session(engine) as session:
        _bound_queries(session)
        model = simsql.reflect(session.connection(), args.table, args.schema)
        binding = simsql.store.storage.binding_for(model)
        value_of = _column_getter(model, columns)
        records = []
        for instance, distance, similarity in session.execute(_similar_statement(args, session, model)):
            record: dict[str, Any] = {"distance": int(distance), "similarity": float(similarity)}
            if columns:
                record.update({name: value_of(instance, name) for name in columns})
            else:
                record["key"] = _key(binding.key_of(instance))
                record["preview"] = preview(binding.text_of(instance))
            records.append(record)
    headers = [*columns, "distance", "similarity"] if columns else ["key", "distance", "similarity", "preview"]
    write_records(args.format, headers, records, sys.stdout)
    return EXIT_OK


def cmd_dupes(args: argparse.Namespace) -> int:
    with open_engine(args) as engine, Session(engine) as session:
        _bound_queries(session)
        model = simsql.reflect(session.connection(), args.table, args.schema)
        groups = simsql.duplicate_groups(session, model, max_distance=args.max_distance)
    out = sys.stdout
    if args.format == "json":
        write_json([{"size": len(g), "keys": [list(k) if isinstance(k, tuple) else k for k in g]} for g in groups], out)
    elif args.format == "csv":
        members = [{"group": i, "size": len(g), "key": k} for i, g in enumerate(groups, 1) for k in g]
        write_csv(["group", "size", "key"], members, out)
    else:
        write_table(["size", "keys"], [{"size": len(g), "keys": ", ".join(flat(k) for k in g)} for g in groups], out)
        rows = sum(len(g) for g in groups)
        print(f"{len(groups)} groups of near-duplicates ({rows} rows) within {args.max_distance} bits", file=sys.stderr)
    return EXIT_OK


def add_similar(commands: Any, common: argparse.ArgumentParser) -> None:
    similar = commands.add_parser(
        "similar", parents=[common], help="rows most similar to a row, a text or a file",
        description="The nearest rows by Hamming distance, exact. --id takes the primary key; for a "
        "composite key, comma-separated values in key order (values containing commas cannot be given).",
    )
    table_options(similar)
    target = similar.add_mutually_exclusive_group(required=True)
    target.add_argument("--id", help="primary key of a row (the row itself is left out)")
    target.add_argument("--text", help="text to compare with")
    target.add_argument("--file", help="file holding the text to compare with ('-' for stdin)")
    similar.add_argument("--limit", type=positive_int, default=10, help="rows to return (default: 10)")
    similar.add_argument("--max-distance", type=distance_up_to(64), default=None, help="farthest distance in bits (0..64)")
    similar.add_argument("--columns", help="comma-separated columns to show instead of key and preview")
    format_option(similar, ("table", "json", "csv"))
    similar.set_defaults(handler=cmd_similar, parser=similar)


def add_dupes(commands: Any, common: argparse.ArgumentParser) -> None:
    dupes = commands.add_parser("dupes", parents=[common], help="groups of near-duplicate rows")
    table_options(dupes)
    dupes.add_argument("--max-distance", type=distance_up_to(3), default=3, help="bits (0..3, default 3)")
    format_option(dupes, ("table", "json", "csv"))
    dupes.set_defaults(handler=cmd_dupes, parser=dupes)
