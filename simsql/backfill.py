"""Fingerprint the rows a table already has, in resumable keyset batches.

Guarantees, and how they are kept:

* **Nothing is lost, nothing is redone.** Each batch is one transaction that writes the
  fingerprints *and* the cursor (``simsql_backfill``). Killed at any instant, the batch in flight
  rolls back; a rerun continues after the last committed batch. Only rows still lacking a
  fingerprint are ever selected, so a rerun after completion is cheap and changes nothing.
* **Concurrent writers win.** A fingerprint is written only if the row is unchanged since it
  was read (same ``xmin``); a row edited meanwhile keeps NULL (its trigger also nulls a stale
  fingerprint) and is picked up by the catch-up pass that follows the main pass.
* **Throughput.** Fingerprinting runs in worker processes while the main process reads the
  next batch and writes the previous one, so database time and CPU time overlap.
"""

from __future__ import annotations

import json
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import Connection

from . import operations, registry
from .dialects import check_server
from .errors import ConfigMismatch, NotAttached, SchemaError
from .fingerprint import Fingerprinter
from .storage import FINGERPRINT_COLUMN, binding_for

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class BackfillResult:
    """What a backfill run did."""

    rows_read: int
    rows_fingerprinted: int
    rows_empty: int
    rows_skipped_changed: int
    batches: int
    seconds: float
    resumed: bool

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class _Plan:
    schema: str
    table: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    source: tuple[str, ...]
    side_table: str | None
    fingerprinter: Fingerprinter


def _fingerprint_batch(fingerprinter: Fingerprinter, texts: list[str | None]) -> list[int | None]:
    """Runs in a worker process."""
    present = [t for t in texts if t is not None]
    fingerprints = iter(fingerprinter.fingerprint_many(present, empty="none"))
    return [next(fingerprints) if t is not None else None for t in texts]


def _plan(connection: Connection, target: type | str, schema: str | None, fingerprinter: Fingerprinter | None) -> _Plan:
    if isinstance(target, type):
        binding = binding_for(target)
        base = binding.model.__table__  # type: ignore[attr-defined]
        schema = base.schema or registry.current_schema(connection)
        table = base.name
        source = tuple(binding.model.__mapper__.attrs[name].columns[0].name for name in binding.source)  # type: ignore[attr-defined]
        chosen = fingerprinter or binding.fingerprinter
        if fingerprinter is not None and fingerprinter != binding.fingerprinter:
            raise ConfigMismatch(
                f"{target.__name__} is configured with {binding.fingerprinter.config_id}, "
                f"not {fingerprinter.config_id}"
            )
        side = binding.table.name if binding.mode == "side_table" else None
    else:
        schema = schema or registry.current_schema(connection)
        entry = registry.read(connection, target, schema)
        if entry is None:
            raise NotAttached(
                f"{schema}.{target} is not attached to simsql (no registry entry); "
                "run `simsql attach` or op.add_simhash() first"
            )
        table = target
        source = entry.source
        side = entry.side_table
        chosen = fingerprinter or fingerprinter_from_settings(entry.settings)
    registry.check(connection, table, schema, chosen.config_id)
    info = operations.describe(connection, table, source, schema)
    holder = side or table
    holder_columns = {c["name"] for c in inspect(connection).get_columns(holder, schema=schema)}
    if FINGERPRINT_COLUMN not in holder_columns:
        raise SchemaError(f"{schema}.{holder} has no {FINGERPRINT_COLUMN!r} column; attach simsql first")
    return _Plan(schema, table, info.keys, info.key_types, source, side, chosen)


def fingerprinter_from_settings(settings: dict[str, Any]) -> Fingerprinter:
    """Rebuild the :class:`Fingerprinter` recorded in the registry (version-aware).

    IDF tables are recorded by digest only; pass the table's Fingerprinter explicitly then.
    """
    return Fingerprinter.from_settings(settings)


class _Statements:
    """SQL for one plan; identifiers quoted by the dialect, values always bound."""

    def __init__(self, connection: Connection, plan: _Plan) -> None:
        q = connection.dialect.identifier_preparer.quote_identifier
        self.base = f"{q(plan.schema)}.{q(plan.table)}"
        keys = [q(k) for k in plan.keys]
        key_list = ", ".join(f"b.{k}" for k in keys)
        self.key_count = len(keys)
        after = (
            f"b.{keys[0]} > :last_0"
            if len(keys) == 1
            else f"({key_list}) > ({', '.join(f':last_{i}' for i in range(len(keys)))})"
        )
        texts = ", ".join(f"b.{q(c)}" for c in plan.source)
        order = ", ".join(f"b.{k}" for k in keys)
        if plan.side_table is None:
            missing = f"b.{q(FINGERPRINT_COLUMN)} IS NULL"
            source_from = f"{self.base} AS b"
        else:
            side = f"{q(plan.schema)}.{q(plan.side_table)}"
            join = " AND ".join(f"s.{k} = b.{k}" for k in keys)
            source_from = f"{self.base} AS b LEFT JOIN {side} AS s ON {join}"
            missing = f"s.{keys[0]} IS NULL"
        select_head = f"SELECT {key_list}, b.xmin::text, {texts} FROM {source_from} WHERE {missing}"
        self.first = text(f"{select_head} ORDER BY {order} LIMIT :limit")
        self.next = text(f"{select_head} AND {after} ORDER BY {order} LIMIT :limit")
        self.count = text(f"SELECT count(*) FROM {source_from} WHERE {missing}")

        arrays = ", ".join(
            [f"CAST(:k_{i} AS {t}[])" for i, t in enumerate(plan.key_types)] + ["CAST(:fps AS bigint[])", "CAST(:xmins AS text[])"]
        )
        names = ", ".join([f"k_{i}" for i in range(len(keys))] + ["fp", "xmin"])
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        if plan.side_table is None:
            self.write = text(
                f"UPDATE {self.base} AS b SET {q(FINGERPRINT_COLUMN)} = v.fp FROM unnest({arrays}) AS v({names}) "
                f"WHERE {match} AND b.xmin::text = v.xmin AND b.{q(FINGERPRINT_COLUMN)} IS NULL"
            )
        else:
            side = f"{q(plan.schema)}.{q(plan.side_table)}"
            self.write = text(
                f"INSERT INTO {side} ({', '.join(keys)}, {q(FINGERPRINT_COLUMN)}) "
                f"SELECT {', '.join(f'v.k_{i}' for i in range(len(keys)))}, v.fp FROM unnest({arrays}) AS v({names}) "
                f"JOIN {self.base} AS b ON {match} AND b.xmin::text = v.xmin ON CONFLICT DO NOTHING"
            )


def _read_progress(connection: Connection, plan: _Plan) -> tuple[str, list[Any] | None, bool]:
    row = connection.execute(
        text(
            f"SELECT config_id, phase, last_key FROM {registry.PROGRESS_TABLE} "
            "WHERE table_schema = :schema AND table_name = :table"
        ),
        {"schema": plan.schema, "table": plan.table},
    ).first()
    if row is None or row.phase == "done" or row.config_id != plan.fingerprinter.config_id:
        return "scan", None, False
    return row.phase, row.last_key, True


def _save_progress(connection: Connection, plan: _Plan, phase: str, last_key: list[Any] | None, rows: int) -> None:
    connection.execute(
        text(
            f"INSERT INTO {registry.PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
            "VALUES (:schema, :table, :config, :phase, CAST(:last_key AS jsonb), :rows) "
            "ON CONFLICT (table_schema, table_name) DO UPDATE SET config_id = excluded.config_id, phase = excluded.phase, "
            f"last_key = excluded.last_key, rows_done = {registry.PROGRESS_TABLE}.rows_done + excluded.rows_done, updated_at = now()"
        ),
        {
            "schema": plan.schema,
            "table": plan.table,
            "config": plan.fingerprinter.config_id,
            "phase": phase,
            "last_key": None if last_key is None else json.dumps(last_key, default=str),
            "rows": rows,
        },
    )


def backfill(
    bind: Engine | str,
    target: type | str,
    *,
    schema: str | None = None,
    fingerprinter: Fingerprinter | None = None,
    batch_size: int = 2000,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> BackfillResult:
    """Fingerprint every row of ``target`` (a mapped class, or an attached table's name) that
    has no fingerprint yet.

    ``workers`` processes fingerprint in parallel (default: CPU count, at most 4; 0 = in this
    process). ``progress(rows_done, rows_total_estimate)`` is called after each batch.
    Interrupt it at any point (Ctrl-C, SIGKILL): a rerun resumes after the last batch.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    engine = create_engine(bind) if isinstance(bind, str) else bind
    started = time.perf_counter()
    with engine.connect() as connection:
        check_server(connection)
        plan = _plan(connection, target, schema, fingerprinter)
        statements = _Statements(connection, plan)
        has_progress_table = inspect(connection).has_table(registry.PROGRESS_TABLE)
        phase, last_key, resumed = _read_progress(connection, plan) if has_progress_table else ("scan", None, False)
        total = int(connection.execute(statements.count).scalar_one())
        connection.rollback()

    if workers is None:
        import os

        workers = min(4, os.cpu_count() or 1)
    # Workers ignore Ctrl-C: the main process decides, and a worker traceback helps nobody.
    pool = (
        ProcessPoolExecutor(max_workers=workers, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))
        if workers > 0 and total > batch_size
        else None
    )
    seen_empty: set[tuple[Any, ...]] = set()
    counters = {"read": 0, "done": 0, "fingerprinted": 0, "empty": 0, "skipped": 0, "batches": 0}

    def fingerprint_async(texts: list[str | None]) -> Future[list[int | None]] | list[int | None]:
        if pool is None:
            return _fingerprint_batch(plan.fingerprinter, texts)
        return pool.submit(_fingerprint_batch, plan.fingerprinter, texts)

    try:
        with engine.connect() as reader, engine.connect() as writer:
            for current_phase in ("scan", "catchup"):
                if current_phase == "scan" and phase == "catchup":
                    continue
                cursor = last_key if current_phase == phase else None
                in_flight: deque[tuple[list[Any], Any, list[str], list[Any]]] = deque()
                while True:
                    rows = _read_batch(reader, statements, cursor, batch_size)
                    reader.rollback()
                    cursor_done = not rows
                    if rows:
                        cursor = list(rows[-1][: statements.key_count])
                        # Rows found empty earlier in this run stay NULL; don't count them twice.
                        rows = [r for r in rows if tuple(r[: statements.key_count]) not in seen_empty]
                    if rows:
                        keys = [list(r[: statements.key_count]) for r in rows]
                        xmins = [r[statements.key_count] for r in rows]
                        texts = [_join_text(r[statements.key_count + 1 :]) for r in rows]
                        in_flight.append((keys, fingerprint_async(texts), xmins, keys[-1]))
                        counters["read"] += len(rows)
                    # Keep two batches in flight so reading, fingerprinting and writing overlap.
                    while in_flight and (len(in_flight) > 2 or cursor_done):
                        batch_keys, pending, batch_xmins, batch_last = in_flight.popleft()
                        fingerprints = pending.result() if isinstance(pending, Future) else pending
                        written = _write_batch(writer, statements, plan, batch_keys, fingerprints, batch_xmins)
                        if has_progress_table:
                            _save_progress(writer, plan, current_phase, batch_last, len(batch_keys))
                        writer.commit()
                        counters["batches"] += 1
                        empties = [tuple(k) for k, f in zip(batch_keys, fingerprints) if f is None]
                        seen_empty.update(empties)
                        counters["empty"] += len(empties)
                        counters["fingerprinted"] += written
                        counters["skipped"] += sum(1 for f in fingerprints if f is not None) - written
                        counters["done"] += len(batch_keys)
                        if progress is not None:
                            progress(counters["done"], max(total, counters["read"]))
                    if cursor_done:
                        break
            if has_progress_table:
                _save_progress(writer, plan, "done", None, 0)
                writer.commit()
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(bind, str):
            engine.dispose()
    return BackfillResult(
        rows_read=counters["read"],
        rows_fingerprinted=counters["fingerprinted"],
        rows_empty=counters["empty"],
        rows_skipped_changed=counters["skipped"],
        batches=counters["batches"],
        seconds=time.perf_counter() - started,
        resumed=resumed,
    )


def _join_text(values: Sequence[Any]) -> str | None:
    parts = [v for v in values if v is not None]
    if not parts:
        return None
    for part in parts:
        if not isinstance(part, str):
            raise SchemaError(f"source column holds {type(part).__name__}, not text")
    return "\n".join(parts)


def _read_batch(connection: Connection, statements: _Statements, cursor: list[Any] | None, limit: int) -> list[Any]:
    if cursor is None:
        return list(connection.execute(statements.first, {"limit": limit}))
    params: dict[str, Any] = {f"last_{i}": value for i, value in enumerate(cursor)}
    params["limit"] = limit
    return list(connection.execute(statements.next, params))


def _write_batch(
    connection: Connection,
    statements: _Statements,
    plan: _Plan,
    keys: list[list[Any]],
    fingerprints: list[int | None],
    xmins: list[str],
) -> int:
    from .bits import to_signed

    chosen = [
        (k, None if f is None else to_signed(f), x)
        for k, f, x in zip(keys, fingerprints, xmins)
        if f is not None or plan.side_table
    ]
    if not chosen:
        return 0
    params: dict[str, Any] = {
        f"k_{i}": [k[i] for k, _, _ in chosen] for i in range(statements.key_count)
    }
    params["fps"] = [f for _, f, _ in chosen]
    params["xmins"] = [x for _, _, x in chosen]
    result = connection.execute(statements.write, params)
    return int(result.rowcount or 0) - (0 if plan.side_table is None else sum(1 for _, f, _ in chosen if f is None))
