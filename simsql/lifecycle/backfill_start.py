"""How a backfill run starts: its arguments checked, its job resolved from a model or the
registry (which table, which text columns, which configuration, checked against the catalog),
and where the last run stopped read from the progress table. :mod:`.backfill` owns the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.batch import BatchSQL, Job
from ..schema.names import PROGRESS_TABLE
from ..store import registry
from ..store.storage import binding_for
from ..text.errors import ConfigMismatch, NotAttached, SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.vectors import AnyFingerprinter
from . import apply, catalog


def resolve_job(connection: Connection, target: type | str, schema: str | None, fingerprinter: AnyFingerprinter | None) -> Job:
    if isinstance(target, type):
        binding = binding_for(target)
        base: Any = binding.model.__table__  # type: ignore[attr-defined]
        schema = base.schema or registry.current_schema(connection)
        table, source, names = base.name, binding.source_columns, binding.names
        if fingerprinter is not None and fingerprinter != binding.fingerprinter:
            raise ConfigMismatch(
                f"{target.__name__} is configured with {binding.fingerprinter.config_id}, not {fingerprinter.config_id}"
            )
        chosen: AnyFingerprinter = binding.fingerprinter
        registry.claim(connection, table, schema, chosen, source, names)
    else:
        schema = schema or registry.current_schema(connection)
        entry = registry.read(connection, target, schema)
        if entry is None:
            raise NotAttached(
                f"{schema}.{target} is not attached to simsql (no registry entry), so its text columns are unknown: "
                "run `simsql attach` or op.add_simhash() first; for a model's own table (SimHashMixin or "
                "simsql.attach_model(Model, ...)) call simsql.backfill(engine, Model), which reads them from the model"
            )
        table, source, names = target, entry.source, entry.names
        chosen = fingerprinter or registry.fingerprinter_from_settings(entry.settings)
    registry.check(connection, table, schema, chosen.config_id)
    info = catalog.describe(connection, table, source, schema, vector=not isinstance(chosen, Fingerprinter))
    holder = catalog.table_facts(connection, names.holder, schema)
    missing = [c for c in (names.fingerprint, names.digest) if holder is None or c not in holder.columns]
    if missing:
        raise SchemaError(
            f"{schema}.{names.holder} has no column {', '.join(map(repr, missing))}: attach simsql first (a table "
            f"attached by simsql 0.1 is upgraded in place, fingerprints kept, by running `simsql attach --table {table}` "
            "again with the same settings)"
        )
    lists = holder is not None and names.side is None and names.part in holder.columns
    return Job(schema, table, info.keys, info.key_types, source, names, chosen, lists=lists)


def read_progress(connection: Connection, sql: BatchSQL) -> tuple[str, list[Any] | None, bool]:
    job = sql.job
    row = connection.execute(
        text(f"SELECT config_id, phase, last_key FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name = :table"),
        {"schema": job.schema, "table": job.cursor_key},
    ).first()
    if row is None or row.phase == "done" or row.config_id != job.fingerprinter.config_id:
        return "scan", None, False
    return row.phase, sql.resume_cursor(row.last_key), True


def check_sizes(batch_size: int, max_batch_bytes: int) -> None:
    """``batch_size`` and ``max_batch_bytes`` must be positive ints (ValueError)."""
    for name, value in (("batch_size", batch_size), ("max_batch_bytes", max_batch_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def label_of(target: type | str, schema: str | None) -> str:
    """How messages name the backfilled table."""
    label = target if isinstance(target, str) else getattr(target, "__tablename__", target.__name__)
    return f"{schema}.{label}" if schema else label


def start_backfill(
    connection: Connection, target: type | str, schema: str | None, fingerprinter: AnyFingerprinter | None, timeouts: apply.Timeouts
) -> Job:
    """The checks and catalog reads that start a backfill (the server, its digest function,
    the registry, the table): the job to run. Committed, so no transaction stays open."""
    apply.set_timeouts(connection, timeouts)
    server = backend(connection)
    server.check_server(connection)
    server.check_digest(connection)
    job = resolve_job(connection, target, schema, fingerprinter)
    connection.commit()
    return job


@dataclass(frozen=True)
class FillStart:
    """Where a run of a job starts: the saved cursor (``phase``, ``last_key``; ``resumed`` when
    there was one), whether the progress table exists, and the rows to do (an estimate)."""

    phase: str
    last_key: list[Any] | None
    resumed: bool
    has_progress_table: bool
    total: int


def start_fill(connection: Connection, job: Job, timeouts: apply.Timeouts) -> FillStart:
    """Read where the job stopped last time and count what is left; committed."""
    apply.set_timeouts(connection, timeouts)
    sql = backend(connection).batch_sql(job)
    has_progress_table = registry.progress_exists(connection)
    phase, last_key, resumed = read_progress(connection, sql) if has_progress_table else ("scan", None, False)
    total = int(connection.execute(sql.count).scalar_one())
    connection.commit()
    return FillStart(phase, last_key, resumed, has_progress_table, total)
