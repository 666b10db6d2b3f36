"""The ``simsql`` command line: attach, backfill and query tables without writing Python.

This is the only module of simsql that talks to a terminal: the library raises and logs,
the command line turns that into messages, progress bars and exit codes.

Exit codes: 0 success, 1 a runtime error (``simsql: error: ...`` on stderr, no traceback),
2 a usage error (bad arguments, no database URL), 130 interrupted by Ctrl-C.

The database URL comes from ``--url``, else ``SIMSQL_DATABASE_URL``, else ``DATABASE_URL``;
plain ``postgresql://`` URLs are accepted and run on psycopg 3, plain ``mysql://`` and
``mariadb://`` ones on PyMySQL (``pip install simsql[mysql]``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TextIO

from sqlalchemy import Engine, and_, cast, create_engine, inspect, literal, select
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.orm import Mapper, Session
from sqlalchemy.types import Text

import simsql
import simsql.lifecycle.apply
import simsql.lifecycle.catalog
import simsql.lifecycle.sampling
import simsql.lifecycle.tables
from simsql import registry, urls
from simsql.dialects import is_mysql
from simsql.errors import EmptyDocument, SimsqlError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

URL_VARIABLES = ("SIMSQL_DATABASE_URL", "DATABASE_URL")
PREVIEW_CHARS = 60

log = logging.getLogger("simsql.cli")


class CommandError(Exception):
    """A runtime failure the user can act on: printed without a traceback, exit 1."""


class UsageError(Exception):
    """The command line itself is wrong: printed like argparse errors, exit 2."""


class Interrupted(Exception):
    """Ctrl-C, carrying what the user should know about the state left behind."""


# -- database access ----------------------------------------------------------------------


def normalise_url(raw: str) -> URL:
    """The library's :func:`simsql.urls.normalise_url`, with a bad URL as a usage error."""
    try:
        return urls.normalise_url(raw)
    except ArgumentError as error:
        raise UsageError(f"invalid database URL: {error}") from None


def resolve_url(explicit: str | None, environ: Mapping[str, str] = os.environ) -> URL:
    for candidate in (explicit, *(environ.get(name) for name in URL_VARIABLES)):
        if candidate:
            return normalise_url(candidate)
    raise UsageError(f"no database URL: pass --url or set {' or '.join(URL_VARIABLES)}")


@contextmanager
def open_engine(args: argparse.Namespace) -> Iterator[Engine]:
    url = resolve_url(getattr(args, "url", None))
    log.info("database: %s", url.render_as_string(hide_password=True))
    try:
        engine = create_engine(url)
    except ArgumentError as error:  # unknown dialect or driver
        raise UsageError(f"invalid database URL: {error}") from None
    try:
        yield engine
    finally:
        engine.dispose()


def _database_message(error: DBAPIError) -> str:
    """The driver's own words (e.g. "connection refused"), without SQLAlchemy's SQL dump and
    documentation link, which say nothing to someone at a terminal."""
    message = str(error.orig).strip() if error.orig is not None else str(error).strip()
    return message or type(error).__name__


def _backfill_command(table: str, schema: str | None) -> str:
    """The command to print as advice, quoted so it can be pasted into a shell as is."""
    words = ["simsql", "backfill", "--table", table, *(["--schema", schema] if schema else [])]
    return " ".join(shlex.quote(word) for word in words)


# -- output -------------------------------------------------------------------------------


def _json_default(value: object) -> str:
    return str(value)  # column values JSON lacks (dates, decimals, UUIDs): their canonical text


def _flat(value: object) -> str:
    """One cell of table or CSV output: composite keys as ``a,b``, NULL as empty."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(_flat(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _preview(value: object, width: int = PREVIEW_CHARS) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def _key(values: Sequence[Any]) -> Any:
    return values[0] if len(values) == 1 else list(values)


def write_json(document: object, out: TextIO) -> None:
    json.dump(document, out, indent=2, ensure_ascii=False, default=_json_default)
    out.write("\n")


def write_csv(headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for record in records:
        # Full precision in CSV: it is read by programs, not people.
        writer.writerow([repr(v) if isinstance(v := record.get(h), float) else _flat(v) for h in headers])


def write_table(headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    """Aligned columns for people; numbers right-aligned, long text previewed."""
    cells = [[_preview(v) if isinstance(v := r.get(h), str) else _flat(v) for h in headers] for r in records]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    numeric = [bool(records) and all(isinstance(r.get(h), (int, float)) for r in records) for h in headers]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    out.write(line(headers) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def write_records(fmt: str, headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    if fmt == "json":
        write_json([{h: r.get(h) for h in headers} for r in records], out)
    elif fmt == "csv":
        write_csv(headers, records, out)
    else:
        write_table(headers, records, out)


def read_text(path: str) -> str:
    """``--file`` contents; ``-`` is stdin, so texts can be piped in."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise CommandError(f"cannot read {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


# -- db -----------------------------------------------------------------------------------


def _migrations() -> ModuleType:
    """``simsql.alembic``, imported only by the commands that migrate: Alembic adds a fifth
    to the start-up time of every other command."""
    import simsql.alembic

    return simsql.alembic


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        _migrations().upgrade(engine, args.revision)
        _print_revisions(_migrations().current(engine))
    return EXIT_OK


def cmd_db_downgrade(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        with engine.connect() as connection:
            # A registry dropped by hand must not block the downgrade that removes it anyway.
            present = registry.registry_exists(connection)
            attached = [f"{e.table_schema}.{e.table_name}" for e in registry.entries(connection)] if present else []
        _migrations().downgrade(engine, args.revision)
        remaining = _migrations().current(engine)
        _print_revisions(remaining, when_none="simsql's objects are removed: nothing of simsql is left in this database")
        if attached and not remaining:
            print(
                "simsql: warning: the registry is gone but these tables keep their fingerprint "
                f"columns and triggers: {', '.join(attached)}",
                file=sys.stderr,
            )
    return EXIT_OK


def cmd_db_current(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        _print_revisions(_migrations().current(engine))
    return EXIT_OK


def _print_revisions(revisions: Sequence[str], when_none: str = "no simsql revision applied (run `simsql db upgrade`)") -> None:
    """Revisions on stdout, one per line (scriptable); ``when_none`` on stderr when none."""
    for revision in revisions:
        print(revision)
    if not revisions:
        print(when_none, file=sys.stderr)


def cmd_db_history(args: argparse.Namespace) -> int:
    history = _migrations().history()
    heads = {revision for revision, _, _ in history} - {down for _, down, _ in history if down}
    for revision, down, message in history:
        head = " (head)" if revision in heads else ""
        summary = message.splitlines()[0] if message else ""
        print(f"{down or '<base>'} -> {revision}{head}, {summary}")
    return EXIT_OK


# -- attach -------------------------------------------------------------------------------


def _ensure_registry(engine: Engine) -> bool:
    """Install simsql's own objects if missing; returns whether it had to."""
    with engine.connect() as connection:
        if registry.registry_exists(connection):
            return False
    _migrations().upgrade(engine)
    return True


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
    if names.side:
        return f"side table {entry.table_schema}.{names.side}"
    return f"columns {names.fingerprint}, {names.digest}, {names.blocks[0]}..{names.blocks[-1]}"


def _offer_backfill(engine: Engine, args: argparse.Namespace) -> None:
    pending = simsql.lifecycle.tables.pending_rows(engine, args.table, args.schema)
    if _should_backfill(args, pending):
        result = run_backfill(
            engine, args.table, args.schema, batch_size=args.batch_size, workers=args.workers, show_progress=True
        )
        print_backfill_summary(result, "text", sys.stdout)
    elif pending:
        command = _backfill_command(args.table, args.schema)
        print(f"{pending} rows have no fingerprint yet; fingerprint them with: {command}")


def cmd_attach(args: argparse.Namespace) -> int:
    """Validates before installing anything (a typo leaves the database untouched), installs
    simsql's registry if missing, then attaches; a rerun finishes an interrupted attach."""
    with open_engine(args) as engine:
        with engine.connect() as connection:
            simsql.lifecycle.catalog.describe(connection, args.table, args.text_columns, args.schema)
        fingerprinter = None if args.background is None else _with_background(simsql.Fingerprinter(), _load_background(args.background))
        if _ensure_registry(engine):
            print(f"installed simsql's registry (revision {', '.join(_migrations().current(engine))})")
        entry = simsql.attach_table(
            engine, args.table, args.text_columns, schema=args.schema, side_table=args.side_table,
            prefix=args.prefix, indexes=args.indexes, concurrently=args.concurrently, lock_timeout=args.lock_timeout,
            index_lock_timeout=args.index_lock_timeout, fingerprinter=fingerprinter,
        )
        print(f"attached {entry.table_schema}.{entry.table_name} ({_describe_attachment(entry)}; "
              f"text from {', '.join(entry.source)})")
        if args.indexes:
            how = " (built online)" if is_mysql(engine.dialect) else " (built concurrently)" if args.concurrently else ""
            print(f"block indexes ready{how}")
        else:
            print("no block indexes built (--no-indexes): queries will scan; rerun attach without it to build them")
        _offer_backfill(engine, args)
    return EXIT_OK


def cmd_detach(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        entry = simsql.detach(engine, args.table, schema=args.schema, lock_timeout=args.lock_timeout)
    print(f"detached {entry.table_schema}.{entry.table_name}: removed {_describe_attachment(entry)}, "
          "its trigger, indexes and registry entry; the table and its data are as before attach")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        found = simsql.status(engine)
    records = [
        {
            "table": f"{s.schema}.{s.table}", "mode": s.mode, "prefix": s.prefix, "source": ",".join(s.source),
            "config_id": s.config_id, "rows": s.rows, "fingerprinted": s.rows_fingerprinted,
            "missing": s.rows_missing, "stale": s.rows_stale,
        }
        for s in found
    ]
    if args.format == "json":
        write_json([{**r, "settings": s.settings} for r, s in zip(records, found)], sys.stdout)
    else:
        write_records(args.format, list(records[0]) if records else ["table"], records, sys.stdout)
        if not records:
            print("no table is attached (run `simsql attach --table ...`)", file=sys.stderr)
    return EXIT_OK


# -- backfill -----------------------------------------------------------------------------


@contextmanager
def _progress_bar(table: str, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    if not enabled:
        yield None
        return
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    bar = tqdm(desc=table, unit=" rows", file=sys.stderr, dynamic_ncols=True)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        bar.close()


@contextmanager
def _interrupt_main_process_only() -> Iterator[None]:
    """Ctrl-C reaches the whole process group: let it interrupt this process only. Forked
    fingerprinting workers inherit this handler and ignore the signal, so they do not print a
    traceback each; the library shuts them down after the interrupted batch."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() == owner:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
        with _interrupt_main_process_only(), _progress_bar(table, show_progress) as progress:
            return simsql.backfill(
                engine, table, schema=schema, batch_size=batch_size, workers=workers, progress=progress,
                lock_timeout=lock_timeout,
            )
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted; every finished batch is saved. "
            f"Run `{_backfill_command(table, schema)}` again to resume where it stopped"
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


# -- refingerprint ------------------------------------------------------------------------


def _load_background(path: str) -> simsql.Background:
    try:
        return simsql.Background.load(path)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def _with_background(fingerprinter: simsql.Fingerprinter, background: simsql.Background) -> simsql.Fingerprinter:
    try:
        return dataclasses.replace(fingerprinter, background=background)
    except simsql.ConfigMismatch as error:
        raise UsageError(f"{error} (pass the same --algorithm-version/--shingle-size/--chinese/--weighting/--seed it was fitted with)") from None


def _fit_and_save_background(engine: Engine, args: argparse.Namespace, to: simsql.Fingerprinter) -> simsql.Fingerprinter:
    """Fit on a random sample of the table, save before moving anything (a rerun resumes with
    ``--background FILE``), and say how the application uses it."""
    try:
        background = simsql.fit_background(engine, args.table, fingerprinter=to, schema=args.schema, sample=args.sample)
    except ValueError as error:
        raise CommandError(str(error)) from None
    try:
        background.save(args.fit_background)
    except OSError as error:
        raise UsageError(f"cannot write {args.fit_background}: {error.strerror or error}") from None
    print(f"fitted a background on {background.documents} texts of {args.table}; saved to {args.fit_background}")
    print(f"  the application fingerprints with: Fingerprinter(background=Background.load({args.fit_background!r}))")
    return _with_background(to, background)


def _refuse_mysql_move(engine: Engine, args: argparse.Namespace) -> None:
    """MySQL/MariaDB cannot stage a second set of fingerprints yet: say what moves the table
    there instead (detach, then attach with the configuration and backfill)."""
    with engine.connect() as connection:
        entry = registry.read(connection, args.table, args.schema or registry.current_schema(connection))
    if entry is None:
        return  # refingerprint's own error names the missing attachment
    columns = " ".join(f"--text-column {shlex.quote(c)}" for c in entry.source)
    table = shlex.quote(args.table) + (f" --schema {shlex.quote(args.schema)}" if args.schema else "")
    background = args.fit_background or args.background
    with_background = f" --background {shlex.quote(background)}" if background else ""
    default_settings = (args.algorithm_version, args.shingle_size, args.chinese, args.weighting, args.seed) == (2, 1, None, None, 0)
    settings_note = "" if default_settings else (
        " (attach uses today's default settings, with or without a background; for others call "
        "simsql.attach_table(..., fingerprinter=...))"
    )
    raise CommandError(
        "MySQL/MariaDB cannot refingerprint a table online yet; move it offline instead (queries find nothing until "
        f"the backfill ends): simsql detach --table {table} && simsql attach --table {table} {columns}{with_background} "
        f"--backfill{settings_note}"
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
        to = _with_background(to, _load_background(args.background))
    if args.fit_background is not None and os.path.exists(args.fit_background):
        raise UsageError(
            f"{args.fit_background} exists; to resume or repeat a move with that background pass --background "
            f"{args.fit_background}, or remove the file to fit a new one"
        )
    command = f"simsql refingerprint --table {args.table}" + (f" --schema {args.schema}" if args.schema else "")
    with open_engine(args) as engine:
        if args.fit_background is not None and not args.abandon:
            to = _fit_and_save_background(engine, args, to)
        if is_mysql(engine.dialect) and not args.abandon:
            _refuse_mysql_move(engine, args)
        try:
            with _interrupt_main_process_only(), _progress_bar(args.table, args.progress and not args.abandon) as progress:
                result = simsql.refingerprint(
                    engine, args.table, to=to, schema=args.schema, batch_size=args.batch_size, workers=args.workers,
                    progress=progress, lock_timeout=args.lock_timeout, abandon=args.abandon,
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
    return EXIT_OK


# -- similar / dupes ----------------------------------------------------------------------


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
        binding = simsql.binding_for(model)
        value_of = _column_getter(model, columns)
        records = []
        for instance, distance, similarity in session.execute(_similar_statement(args, session, model)):
            record: dict[str, Any] = {"distance": int(distance), "similarity": float(similarity)}
            if columns:
                record.update({name: value_of(instance, name) for name in columns})
            else:
                record["key"] = _key(binding.key_of(instance))
                record["preview"] = _preview(binding.text_of(instance))
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
        write_table(["size", "keys"], [{"size": len(g), "keys": ", ".join(_flat(k) for k in g)} for g in groups], out)
        rows = sum(len(g) for g in groups)
        print(f"{len(groups)} groups of near-duplicates ({rows} rows) within {args.max_distance} bits", file=sys.stderr)
    return EXIT_OK


# -- fingerprint / demo -------------------------------------------------------------------


def cmd_fingerprint(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.file is None):
        raise UsageError("give the text as an argument or with --file (one of them)")
    text = args.text if args.text is not None else read_text(args.file)
    try:
        fingerprinter = simsql.Fingerprinter(
            tokenizer=args.tokenizer,
            shingle_size=args.shingle_size,
            char_ngram_size=args.char_ngram_size,
            chinese=args.chinese,
            weighting=args.weighting,
            seed=args.seed,
            version=args.algorithm_version,
        )
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.background is not None:
        fingerprinter = _with_background(fingerprinter, _load_background(args.background))
    fingerprint = fingerprinter.fingerprint(text)
    blocks = simsql.blocks(fingerprint)
    if args.format == "json":
        write_json(
            {
                "hex": f"0x{fingerprint:016x}",
                "unsigned": fingerprint,
                "signed": simsql.to_signed(fingerprint),
                "blocks": list(blocks),
                "config_id": fingerprinter.config_id,
                "settings": fingerprinter.settings,
            },
            sys.stdout,
        )
        return EXIT_OK
    print(f"hex       0x{fingerprint:016x}")
    print(f"unsigned  {fingerprint}")
    print(f"signed    {simsql.to_signed(fingerprint)}  (as stored in a bigint)")
    print(f"blocks    {' '.join(str(b) for b in blocks)}  (simhash_b0..simhash_b3)")
    print(f"config    {fingerprinter.config_id}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Only an explicit ``--url`` is used: the demo creates tables, and must not do so in
    whatever database ``DATABASE_URL`` happens to point at."""
    try:
        from simsql.demo import run_demo  # type: ignore[import-not-found, unused-ignore]
    except ImportError as error:
        raise CommandError(f"the demo is not available in this installation ({error})") from None
    explicit = getattr(args, "url", None)
    url = normalise_url(explicit).render_as_string(hide_password=False) if explicit else None
    run_demo(url, out=sys.stdout)
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}")
    return value


def _non_negative_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {raw!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {raw!r}")
    return value


def _distance(limit: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = _non_negative_int(raw)
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected at most {limit}, got {value}")
        return value

    return parse


def _common_options(suppress: bool, url: bool = True) -> argparse.ArgumentParser:
    """``--url`` and ``-v`` work before or after the subcommand. Subparsers leave them unset
    when not given (SUPPRESS), so they don't overwrite a value given before the subcommand.
    Commands that need no database (or, like the demo, read no environment) get no shared
    ``--url``, so their help never offers one."""
    default: Any = argparse.SUPPRESS if suppress else None
    common = argparse.ArgumentParser(add_help=False)
    if url:
        common.add_argument(
            "--url",
            default=default,
            help=f"database URL (default: ${URL_VARIABLES[0]}, then ${URL_VARIABLES[1]})",
        )
    common.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS if suppress else 0,
        help="log what is done (-vv: debug)",
    )
    return common


def _table_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True, help="table name (never interpreted as SQL)")
    parser.add_argument("--schema", help="schema of the table (default: the connection's current schema)")


def _format_option(parser: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    parser.add_argument("--format", choices=choices, default=choices[0], help=f"output format (default: {choices[0]})")


def _backfill_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=_positive_int, default=2000, help="rows per transaction (default: 2000)")
    parser.add_argument(
        "--workers", type=_non_negative_int, default=None,
        help="fingerprinting processes (default: CPU count, at most 4; 0: in this process)",
    )


def _add_db_commands(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
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


def _add_attach(commands: Any, common: argparse.ArgumentParser) -> None:
    attach = commands.add_parser(
        "attach", parents=[common], help="add fingerprints to an existing table",
        description="Add fingerprint columns (or a side table), their trigger and indexes to a table, "
        "installing simsql's registry first if needed; then offer to backfill existing rows.",
    )
    _table_options(attach)
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
    attach.add_argument("--no-indexes", dest="indexes", action="store_false", help="skip the block indexes")
    attach.add_argument(
        "--background", metavar="FILE",
        help="fingerprint with today's default centred on this background (see refingerprint --fit-background)",
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
    _lock_timeout_option(attach)
    attach.add_argument(
        "--index-lock-timeout", default="10min",
        help="longest wait of a concurrent index build for older transactions to end (default: 10min; "
        "PostgreSQL only: on MySQL/MariaDB a waiting ALTER blocks other queries, so --lock-timeout bounds it)",
    )
    _backfill_options(attach)
    attach.set_defaults(handler=cmd_attach, parser=attach)


def _lock_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock-timeout", default="5s",
        help="longest wait for a lock on the table before giving up, as PostgreSQL reads it (default: 5s; "
        "MySQL/MariaDB round it up to whole seconds)",
    )


def _add_detach(commands: Any, common: argparse.ArgumentParser) -> None:
    detach = commands.add_parser(
        "detach", parents=[common], help="remove everything simsql added to a table",
        description="Drop the fingerprint columns (or side table), trigger, indexes and registry entry of a "
        "table: it is left as it was before attach. Refuses while another object (a view, an index, a "
        "foreign key) depends on them.",
    )
    _table_options(detach)
    _lock_timeout_option(detach)
    detach.set_defaults(handler=cmd_detach, parser=detach)


def _add_status(commands: Any, common: argparse.ArgumentParser) -> None:
    status = commands.add_parser(
        "status", parents=[common], help="attached tables: mode, configuration, rows fingerprinted, missing, stale",
    )
    _format_option(status, ("table", "json", "csv"))
    status.set_defaults(handler=cmd_status, parser=status)


def _add_backfill(commands: Any, common: argparse.ArgumentParser) -> None:
    backfill = commands.add_parser(
        "backfill", parents=[common], help="fingerprint rows that have none yet (resumable)",
        description="Fingerprint every row lacking a fingerprint, in batches committed one by one. "
        "Interrupt it at any time: running it again resumes after the last finished batch.",
    )
    _table_options(backfill)
    _backfill_options(backfill)
    _lock_timeout_option(backfill)
    backfill.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    _format_option(backfill, ("text", "json"))
    backfill.set_defaults(handler=cmd_backfill, parser=backfill)


def _add_refingerprint(commands: Any, common: argparse.ArgumentParser) -> None:
    refingerprint = commands.add_parser(
        "refingerprint", parents=[common], help="move a table to another fingerprint configuration, online",
        description="Fingerprint every row again with the new configuration into a second set of columns (or "
        "side table) while the table stays in use with its current one, then switch both in one short "
        "transaction. Interrupt it at any time: running it again resumes.",
    )
    _table_options(refingerprint)
    refingerprint.add_argument(
        "--algorithm-version", type=int, choices=(1, 2), default=2, dest="algorithm_version",
        help="fingerprint algorithm of the new configuration (default: 2, today's default)",
    )
    refingerprint.add_argument("--shingle-size", type=_positive_int, default=1, help="words per shingle (default: 1)")
    refingerprint.add_argument("--chinese", choices=("jieba", "bigrams"), default=None, help="default: the version's")
    refingerprint.add_argument(
        "--weighting", choices=("prior", "log", "count", "jieba_idf"), default=None, help="default: the version's",
    )
    refingerprint.add_argument("--seed", type=_non_negative_int, default=0)
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
        "--sample", type=_positive_int, default=simsql.lifecycle.sampling.DEFAULT_SAMPLE,
        help=f"texts read by --fit-background (default: {simsql.lifecycle.sampling.DEFAULT_SAMPLE})",
    )
    refingerprint.add_argument(
        "--abandon", action="store_true", help="remove an unfinished refingerprint instead (the table keeps its configuration)",
    )
    _backfill_options(refingerprint)
    _lock_timeout_option(refingerprint)
    refingerprint.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    refingerprint.set_defaults(handler=cmd_refingerprint, parser=refingerprint)


def _add_similar(commands: Any, common: argparse.ArgumentParser) -> None:
    similar = commands.add_parser(
        "similar", parents=[common], help="rows most similar to a row, a text or a file",
        description="The nearest rows by Hamming distance, exact. --id takes the primary key; for a "
        "composite key, comma-separated values in key order (values containing commas cannot be given).",
    )
    _table_options(similar)
    target = similar.add_mutually_exclusive_group(required=True)
    target.add_argument("--id", help="primary key of a row (the row itself is left out)")
    target.add_argument("--text", help="text to compare with")
    target.add_argument("--file", help="file holding the text to compare with ('-' for stdin)")
    similar.add_argument("--limit", type=_positive_int, default=10, help="rows to return (default: 10)")
    similar.add_argument("--max-distance", type=_distance(64), default=None, help="farthest distance in bits (0..64)")
    similar.add_argument("--columns", help="comma-separated columns to show instead of key and preview")
    _format_option(similar, ("table", "json", "csv"))
    similar.set_defaults(handler=cmd_similar, parser=similar)


def _add_dupes(commands: Any, common: argparse.ArgumentParser) -> None:
    dupes = commands.add_parser("dupes", parents=[common], help="groups of near-duplicate rows")
    _table_options(dupes)
    dupes.add_argument("--max-distance", type=_distance(3), default=3, help="bits (0..3, default 3)")
    _format_option(dupes, ("table", "json", "csv"))
    dupes.set_defaults(handler=cmd_dupes, parser=dupes)


def _add_fingerprint(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
    fingerprint = commands.add_parser(
        "fingerprint", parents=[local], help="print the fingerprint of a text (no database)"
    )
    fingerprint.add_argument("text", nargs="?", help="the text")
    fingerprint.add_argument("--file", help="read the text from a file ('-' for stdin)")
    fingerprint.add_argument("--tokenizer", choices=("words", "chars"), default="words")
    fingerprint.add_argument("--shingle-size", type=_positive_int, default=1, help="words per shingle (default: 1)")
    fingerprint.add_argument("--char-ngram-size", type=_positive_int, default=4, help="characters per n-gram (default: 4)")
    fingerprint.add_argument(
        "--chinese", choices=("jieba", "bigrams"), default=None,
        help="default: the version's default (version 2: bigrams; version 1: jieba)",
    )  # fmt: skip
    fingerprint.add_argument(
        "--weighting", choices=("prior", "log", "count", "jieba_idf"), default=None,
        help="default: the version's default (version 2: prior; version 1: log)",
    )  # fmt: skip
    fingerprint.add_argument("--seed", type=_non_negative_int, default=0)
    fingerprint.add_argument(
        "--algorithm-version", type=int, choices=(1, 2), default=2, dest="algorithm_version",
        help="fingerprint algorithm version (1: simsql 0.1's defaults; default: 2)",
    )  # fmt: skip
    fingerprint.add_argument("--background", metavar="FILE", help="centre bits on this background (see refingerprint)")
    _format_option(fingerprint, ("text", "json"))
    fingerprint.set_defaults(handler=cmd_fingerprint, parser=fingerprint)


def _add_demo(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
    demo = commands.add_parser(
        "demo", parents=[local], help="a guided tour on demo data",
        description="Runs on --url if given, else on an embedded PostgreSQL that simsql starts itself. "
        f"{' and '.join(URL_VARIABLES)} are not read, so the demo never writes into your application's "
        "database by accident.",
    )
    demo.add_argument(
        "--url", default=argparse.SUPPRESS,
        help="PostgreSQL URL to run the demo on, in a schema of its own (default: the embedded PostgreSQL)",
    )
    demo.set_defaults(handler=cmd_demo, parser=demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simsql",
        parents=[_common_options(suppress=False)],
        description="SimHash near-duplicate detection inside PostgreSQL.",
        epilog="Exit codes: 0 ok, 1 error, 2 usage error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"simsql {simsql.__version__}")
    common = _common_options(suppress=True)
    local = _common_options(suppress=True, url=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_db_commands(commands, common, local)
    for add in (_add_attach, _add_detach, _add_status, _add_backfill, _add_refingerprint, _add_similar, _add_dupes):
        add(commands, common)
    _add_fingerprint(commands, common, local)  # no database: no --url
    _add_demo(commands, common, local)  # a --url of its own, no environment
    return parser


# -- entry point --------------------------------------------------------------------------


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbosity < 2:
        logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # one line per plugin


def _error(message: str) -> None:
    print(f"simsql: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except UsageError as error:
        getattr(args, "parser", parser).print_usage(sys.stderr)
        _error(str(error))
        return EXIT_USAGE
    except (SimsqlError, CommandError) as error:
        _error(str(error))
        return EXIT_ERROR
    except DBAPIError as error:
        _error(_database_message(error))
        return EXIT_ERROR
    except Interrupted as interruption:
        print(f"simsql: {interruption}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("simsql: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`simsql similar ... | head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
