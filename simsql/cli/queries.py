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

from ..queries.wide_duplicates import DEDUPE_REACH, MAX_DEDUPE_PROBE_RADIUS
from ..text.errors import EmptyDocument
from .common import EXIT_OK, CommandError, UsageError, open_engine
from .options import distance_up_to, format_option, positive_int, table_options
from .output import flat, preview, read_text, write_csv, write_json, write_records, write_table
from .progress import interrupt_main_process_only


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


def _reach_by_size(setting: str) -> str:
    """``setting`` of each tier of ``DEDUPE_REACH``, for the help: "3 up to 20,000 rows, ..., else 1"."""
    return ", ".join(
        f"{getattr(tier, setting)} up to {tier.max_rows:,} rows" if tier.max_rows is not None else f"else {getattr(tier, setting)}"
        for tier in DEDUPE_REACH
    )


def _dupes_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``duplicate_groups`` the user gave (the rest keep the library's
    defaults, which differ by mode)."""
    options: dict[str, Any] = {"by_text": None if args.by is None else args.by == "text"}
    for name in ("min_containment", "wide_distance", "probe_radius"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options


def _dupes_groups(session: Session, model: type, args: argparse.Namespace) -> list[list[Any]]:
    """The groups, with a bar per phase on stderr (block self-joins, then texts) when asked."""
    phases: dict[str, Any] = {}

    def report(phase: str, done: int, total: int) -> None:
        if phase not in phases:
            for bar in phases.values():
                bar.close()
            from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

            unit = " joins" if phase == "candidates" else " pairs"
            phases[phase] = tqdm(desc=f"{args.table}: {phase}", unit=unit, file=sys.stderr, dynamic_ncols=True, total=total)
        phases[phase].update(done - phases[phase].n)

    show = args.progress and sys.stderr.isatty()
    try:
        return simsql.duplicate_groups(
            session, model, args.max_distance, progress=report if show else None, **_dupes_options(args)
        )
    except (TypeError, ValueError) as error:  # an option of one mode given to the other
        raise UsageError(str(error)) from None
    finally:
        for bar in phases.values():
            bar.close()


def cmd_dupes(args: argparse.Namespace) -> int:
    with open_engine(args) as engine, Session(engine) as session:
        _bound_queries(session)
        model = simsql.reflect(session.connection(), args.table, args.schema)
        with interrupt_main_process_only():
            groups = _dupes_groups(session, model, args)
        wide = bool(simsql.store.storage.binding_for(model).words) and args.by != "fingerprint"
    out = sys.stdout
    if args.format == "json":
        write_json([{"size": len(g), "keys": [list(k) if isinstance(k, tuple) else k for k in g]} for g in groups], out)
    elif args.format == "csv":
        members = [{"group": i, "size": len(g), "key": k} for i, g in enumerate(groups, 1) for k in g]
        write_csv(["group", "size", "key"], members, out)
    else:
        write_table(["size", "keys"], [{"size": len(g), "keys": ", ".join(flat(k) for k in g)} for g in groups], out)
        rows = sum(len(g) for g in groups)
        rule = "confirmed by text (wide signature)" if wide else f"within {args.max_distance} bits"
        print(f"{len(groups)} groups of near-duplicates ({rows} rows) {rule}", file=sys.stderr)
    return EXIT_OK


def share(raw: str) -> float:
    """A share in (0, 1]."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {raw!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {raw!r}")
    return value


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
    dupes = commands.add_parser(
        "dupes", parents=[common], help="groups of near-duplicate rows",
        description="Groups of near-duplicate rows, found by the database with block self-joins. On a table "
        "with the wide signature, pairs come from its 8 blocks and are confirmed by their texts (what "
        "find_original finds); elsewhere, pairs within --max-distance bits of the 64-bit fingerprint.",
    )  # fmt: skip
    table_options(dupes)
    dupes.add_argument("--max-distance", type=distance_up_to(3), default=3, help="bits of the 64-bit fingerprint (0..3, default 3)")
    dupes.add_argument(
        "--by", choices=("text", "fingerprint"), default=None,
        help="text: wide signature and text; fingerprint: the 64-bit rule (default: text on a wide table)",
    )  # fmt: skip
    dupes.add_argument("--min-containment", type=share, default=None, help="share of a text's words in shingles of the other (by text; default 0.5)")
    dupes.add_argument("--wide-distance", type=distance_up_to(256), default=None, help=f"bits of the 256-bit signature (by text; default: {_reach_by_size('wide_distance')})")
    dupes.add_argument(
        "--probe-radius", type=distance_up_to(MAX_DEDUPE_PROBE_RADIUS), default=None,
        help=f"bits a block may differ in (by text; 0..{MAX_DEDUPE_PROBE_RADIUS}; default: {_reach_by_size('probe_radius')})",
    )  # fmt: skip
    dupes.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    format_option(dupes, ("table", "json", "csv"))
    dupes.set_defaults(handler=cmd_dupes, parser=dupes)
