"""The statements of a backfill, one class per server; :mod:`.backfill` owns the flow.

Every class answers the same questions for one :class:`Job`: which rows still lack a
fingerprint after a cursor (their sizes first, then their keys and texts), how to store a
batch of fingerprints so that only rows still holding the text they were computed from keep
one, and how to keep the resume cursor. The flow (batches, workers, retries, resume) never
looks at SQL, so the guarantees listed in :mod:`.backfill` hold on every server alike.

* :class:`BatchSQL` — PostgreSQL: a batch is stored by one statement over ``unnest()`` arrays.
* :class:`MySQLBatchSQL` — MySQL 8.0+ and MariaDB 10.6+, which have no arrays: a batch is
  loaded into a session temporary table typed like the key, then joined.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError

from ..bits import to_signed
from ..dialects import is_mysql
from ..dialects import mysql as my
from ..fingerprint import Fingerprinter
from ..schema import BATCH_TABLE, PROGRESS_TABLE, Names
from ..storage import digest_sql, quote


@dataclass(frozen=True)
class Job:
    """One table to backfill, resolved from the registry or a mapped class."""

    schema: str
    table: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    """Each key column's type as the catalog spells it (``bytea``, ``varbinary(16)``)."""
    source: tuple[str, ...]
    names: Names
    fingerprinter: Fingerprinter
    cursor: str | None = None
    """Key of the resume cursor in ``simsql_backfill`` (default: the table's name)."""

    @property
    def cursor_key(self) -> str:
        return self.cursor or self.table


class Fingerprinted(NamedTuple):
    """One row of a batch to store: its key, its fingerprint (None: the text has no
    features; stored only in side-table mode, so the row is not read again) and the digest of
    the text it was computed from."""

    key: Sequence[Any]
    fingerprint: int | None
    digest: uuid.UUID


def encode_key(value: Any) -> Any:
    """A key value as JSON (``\\x``-prefixed hex for binary, text for dates, decimals, UUIDs)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class BatchSQL:
    """PostgreSQL. Key values travel as text cast to the key's own type (a cursor over
    ``bytea`` or ``uuid`` keys resumes exactly); a batch is stored in one statement."""

    DEADLOCK_STATE = "40P01"

    def __init__(self, job: Job) -> None:
        self.job = job
        self.quoted_keys = keys = [self.quote(k) for k in job.keys]
        self.key_count = len(keys)
        self.base = f"{self.quote(job.schema)}.{self.quote(job.table)}"
        self.key_list = ", ".join(f"b.{k}" for k in keys)
        names = job.names
        if names.side is None:
            # A fingerprint without its text's digest (stored by simsql 0.1, or a raw loader) is
            # unverified: fingerprinted again.
            missing = f"(b.{self.quote(names.fingerprint)} IS NULL OR b.{self.quote(names.digest)} IS NULL)"
            source_from = f"{self.base} AS b"
        else:
            self.side = f"{self.quote(job.schema)}.{self.quote(names.side)}"
            side_keys = [self.quote(k) for k in names.side_keys(job.keys)]
            join = " AND ".join(f"s.{s} = b.{k}" for s, k in zip(side_keys, keys))
            source_from = f"{self.base} AS b LEFT JOIN {self.side} AS s ON {join}"
            missing = f"(s.{side_keys[0]} IS NULL OR s.{self.quote(names.digest)} IS NULL)"
        size = " + ".join(f"coalesce(octet_length(b.{self.quote(c)}), 0)" for c in job.source)
        texts = ", ".join(self.text_of(f"b.{self.quote(c)}") for c in job.source)
        after = self.after(keys)
        tail = f"ORDER BY {self.key_list} LIMIT :limit"
        self.sizes = {
            False: text(f"SELECT {size} FROM {source_from} WHERE {missing} {tail}"),
            True: text(f"SELECT {size} FROM {source_from} WHERE {missing} AND {after} {tail}"),
        }
        self.rows = {
            False: text(f"SELECT {self.key_list}, {texts} FROM {source_from} WHERE {missing} {tail}"),
            True: text(f"SELECT {self.key_list}, {texts} FROM {source_from} WHERE {missing} AND {after} {tail}"),
        }
        self.count = text(f"SELECT count(*) FROM {source_from} WHERE {missing}")
        self.write = self._write(keys)

    # -- spelling ------------------------------------------------------------------------------

    @staticmethod
    def quote(name: str) -> str:
        return quote(name)

    def text_of(self, column: str) -> str:
        """A source column as text, the way the digest reads it (char(n) loses its padding in both)."""
        return f"CAST({column} AS text)"

    def after(self, keys: Sequence[str]) -> str:
        """Rows after the cursor ``:last_0, :last_1, ...`` in key order."""
        last = [f"CAST(:last_{i} AS {t})" for i, t in enumerate(self.job.key_types)]
        if len(keys) > 1:
            return f"({self.key_list}) > ({', '.join(last)})"
        return f"b.{keys[0]} > {last[0]}"

    def cursor_params(self, cursor: Sequence[Any]) -> dict[str, Any]:
        return {f"last_{i}": None if v is None else str(encode_key(v)) for i, v in enumerate(cursor)}

    def resume_cursor(self, stored: Any) -> list[Any] | None:
        """The cursor saved by :meth:`save_progress`, as :meth:`cursor_params` takes it."""
        if stored is None:
            return None
        return list(json.loads(stored) if isinstance(stored, (str, bytes)) else stored)

    def is_deadlock(self, error: DBAPIError) -> bool:
        return getattr(error.orig, "sqlstate", None) == self.DEADLOCK_STATE

    # -- writing -------------------------------------------------------------------------------

    def _write(self, keys: list[str]) -> Any:
        job = self.job
        arrays = ", ".join(
            [f"CAST(:k_{i} AS {t}[])" for i, t in enumerate(job.key_types)]
            + ["CAST(:fps AS bigint[])", "CAST(:srcs AS uuid[])"]
        )
        columns = ", ".join([f"k_{i}" for i in range(len(keys))] + ["fp", "src"])
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        fp, src = self.quote(job.names.fingerprint), self.quote(job.names.digest)
        if job.names.side is None:
            # The row trigger keeps the fingerprint only if src is the digest of the row's text.
            return text(
                f"UPDATE {self.base} AS b SET {fp} = v.fp, {src} = v.src FROM unnest({arrays}) AS v({columns}) "
                f"WHERE {match} AND (b.{fp} IS NULL OR b.{src} IS NULL) RETURNING b.{fp} IS NOT NULL"
            )
        side_keys = ", ".join(self.quote(k) for k in job.names.side_keys(job.keys))
        values = ", ".join(f"v.k_{i}" for i in range(len(keys)))
        return text(
            f"INSERT INTO {self.side} ({side_keys}, {fp}, {src}) "
            f"SELECT {values}, v.fp, v.src FROM unnest({arrays}) AS v({columns}) "
            f"JOIN {self.base} AS b ON {match} WHERE {digest_sql(job.source, 'b.')} = v.src "
            f"ORDER BY {values} FOR SHARE OF b "
            f"ON CONFLICT ({side_keys}) DO UPDATE SET {fp} = excluded.{fp}, {src} = excluded.{src} "
            f"WHERE {self.side}.{src} IS NULL RETURNING {fp} IS NOT NULL"
        )

    def prepare(self, connection: Connection) -> None:
        """Before the first :meth:`store` on ``connection`` (nothing on PostgreSQL)."""

    def release(self, connection: Connection) -> None:
        """After the last :meth:`store` on ``connection`` (nothing on PostgreSQL)."""

    def store(self, connection: Connection, rows: Sequence[Fingerprinted]) -> int:
        """Store ``rows`` where the row still holds the text of its digest, in the
        connection's transaction; returns how many fingerprints were stored."""
        params: dict[str, Any] = {f"k_{i}": [r.key[i] for r in rows] for i in range(self.key_count)}
        params["fps"] = [None if r.fingerprint is None else to_signed(r.fingerprint) for r in rows]
        params["srcs"] = [str(r.digest) for r in rows]
        return sum(1 for stored in connection.execute(self.write, params).scalars() if stored)

    # -- the cursor ------------------------------------------------------------------------------

    SAVE_PROGRESS = (
        f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
        "VALUES (:schema, :table, :config, :phase, CAST(:last_key AS jsonb), :rows) "
        "ON CONFLICT (table_schema, table_name) DO UPDATE SET config_id = excluded.config_id, phase = excluded.phase, "
        f"last_key = excluded.last_key, rows_done = {PROGRESS_TABLE}.rows_done + excluded.rows_done, updated_at = now()"
    )

    def save_progress(self, connection: Connection, phase: str, last_key: Sequence[Any] | None, rows: int) -> None:
        job = self.job
        connection.execute(
            text(self.SAVE_PROGRESS),
            {
                "schema": job.schema,
                "table": job.cursor_key,
                "config": job.fingerprinter.config_id,
                "phase": phase,
                "last_key": None if last_key is None else json.dumps([encode_key(v) for v in last_key]),
                "rows": rows,
            },
        )


class MySQLBatchSQL(BatchSQL):
    """MySQL 8.0+ and MariaDB 10.6+.

    No arrays, no ``UPDATE ... FROM``, no ``RETURNING`` on updates: a batch is loaded (one
    multi-row INSERT) into a session temporary table whose key columns have the key's own type
    and collation, and joined from there. ``python -m benchmarks.backfill --strategies`` times
    it against a ``JSON_TABLE`` over one JSON document and a ``UNION ALL`` of one-row SELECTs:
    on MariaDB 10.11, 20k rows, it was level with ``JSON_TABLE`` and faster than ``UNION ALL``,
    and it needs no JSON or literal spelling of keys (binary keys, collations, 64-bit unsigned
    numbers all arrive as the key's own type).

    The guards are PostgreSQL's: in columns mode the row trigger (``BEFORE UPDATE``) nulls a
    fingerprint whose digest is not the row's text; in side-table mode the user's rows are
    read ``LOCK IN SHARE MODE`` (both servers' spelling) and compared with the digest, so a
    writer either committed first (the fingerprint is not stored) or waits for this batch (its
    ``AFTER UPDATE`` trigger then deletes the side row). Fingerprints are unsigned here, and a
    digest is the 32 hex digits ``MD5()`` returns.
    """

    DEADLOCK_ERROR = 1213  # ER_LOCK_DEADLOCK: InnoDB rolled the transaction back

    def __init__(self, job: Job) -> None:
        self.batch = f"{self.quote(job.schema)}.{self.quote(BATCH_TABLE)}"
        super().__init__(job)
        keys = [f"k_{i}" for i in range(self.key_count)]
        self.create = text(
            f"CREATE TEMPORARY TABLE {self.batch} ("
            + ", ".join(f"{k} {t} NOT NULL" for k, t in zip(keys, job.key_types))
            + f", fp BIGINT UNSIGNED NULL, src CHAR(32) NOT NULL, PRIMARY KEY ({', '.join(keys)}))"
        )
        self.drop = text(f"DROP TEMPORARY TABLE IF EXISTS {self.batch}")
        self.clear = text(f"DELETE FROM {self.batch}")
        self.load = text(
            f"INSERT INTO {self.batch} ({', '.join(keys)}, fp, src) VALUES ({', '.join(f':{k}' for k in keys)}, :fp, :src)"
        )
        self.stored = self._stored()

    @staticmethod
    def quote(name: str) -> str:
        return my.quote(name)

    def text_of(self, column: str) -> str:
        return column  # CHAR(n) is read without its padding, as CONCAT_WS in the digest reads it

    def after(self, keys: Sequence[str]) -> str:
        """``k1 > :l1 OR (k1 = :l1 AND k2 > :l2) ...``: MariaDB reads a row comparison
        ``(k1, k2) > (...)`` by scanning the key from its start, which makes every batch slower
        than the one before; the expanded form is a range on the primary key."""
        terms = []
        for i, key in enumerate(keys):
            equal = [f"b.{k} = :last_{j}" for j, k in enumerate(keys[:i])]
            terms.append("(" + " AND ".join([*equal, f"b.{key} > :last_{i}"]) + ")")
        return "(" + " OR ".join(terms) + ")"

    def cursor_params(self, cursor: Sequence[Any]) -> dict[str, Any]:
        """The key values themselves (a number bound as text would compare as a double)."""
        return {f"last_{i}": value for i, value in enumerate(cursor)}

    def resume_cursor(self, stored: Any) -> list[Any] | None:
        values = super().resume_cursor(stored)
        if values is None:
            return None
        return [_decode_key(v, t) for v, t in zip(values, self.job.key_types)]

    def is_deadlock(self, error: DBAPIError) -> bool:
        arguments: tuple[Any, ...] = getattr(error.orig, "args", ())
        return bool(arguments) and arguments[0] == self.DEADLOCK_ERROR

    def _write(self, keys: list[str]) -> Any:
        job, batch = self.job, self.batch
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        fp, src = self.quote(job.names.fingerprint), self.quote(job.names.digest)
        if job.names.side is None:
            # STRAIGHT_JOIN: the batch first, then each of its rows by key. Joined the other way
            # round, the optimizer may scan the (small) table and lock rows outside the batch, so
            # a writer holding any row anywhere stalls the batch until the lock timeout.
            return text(
                f"UPDATE {batch} AS v STRAIGHT_JOIN {self.base} AS b ON {match} SET b.{fp} = v.fp, b.{src} = v.src "
                f"WHERE b.{fp} IS NULL OR b.{src} IS NULL"
            )
        side_keys = [self.quote(k) for k in job.names.side_keys(job.keys)]
        values = ", ".join(f"v.k_{i}" for i in range(len(keys)))
        # ON DUPLICATE KEY UPDATE has no WHERE: each assignment keeps the row unless its digest
        # is NULL. Assignments run left to right, so the digest is tested before it changes.
        keep = f"{self.side}.{src} IS NULL"
        return text(
            f"INSERT INTO {self.side} ({', '.join(side_keys)}, {fp}, {src}) "
            f"SELECT {values}, v.fp, v.src FROM {batch} AS v STRAIGHT_JOIN {self.base} AS b ON {match} "
            f"WHERE {my.digest_sql(job.source, 'b.')} = v.src ORDER BY {values} LOCK IN SHARE MODE "
            f"ON DUPLICATE KEY UPDATE {fp} = IF({keep}, VALUES({fp}), {self.side}.{fp}), "
            f"{src} = IF({keep}, VALUES({src}), {self.side}.{src})"
        )

    def _stored(self) -> Any:
        """How many rows of the batch now hold the fingerprint computed here (read after the
        write, in its transaction: the rows it wrote are locked by it)."""
        names = self.job.names
        fp, src = self.quote(names.fingerprint), self.quote(names.digest)
        if names.side is None:
            holder, keys = self.base, self.quoted_keys
        else:
            holder, keys = self.side, [self.quote(k) for k in names.side_keys(self.job.keys)]
        match = " AND ".join(f"h.{k} = v.k_{i}" for i, k in enumerate(keys))
        return text(f"SELECT COUNT(*) FROM {self.batch} AS v JOIN {holder} AS h ON {match} WHERE h.{fp} = v.fp AND h.{src} = v.src")

    def prepare(self, connection: Connection) -> None:
        """The session's batch table (a pooled session may still hold one from another table).
        Temporary tables cause no implicit commit."""
        connection.execute(self.drop)
        connection.execute(self.create)

    def release(self, connection: Connection) -> None:
        connection.execute(self.drop)

    def store(self, connection: Connection, rows: Sequence[Fingerprinted]) -> int:
        connection.execute(self.clear)
        connection.execute(
            self.load,
            [
                {**{f"k_{i}": r.key[i] for i in range(self.key_count)}, "fp": r.fingerprint, "src": r.digest.hex}
                for r in rows
            ],
        )
        connection.execute(self.write)
        return int(connection.execute(self.stored).scalar_one())

    SAVE_PROGRESS = (
        f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
        "VALUES (:schema, :table, :config, :phase, :last_key, :rows) "
        "ON DUPLICATE KEY UPDATE config_id = VALUES(config_id), phase = VALUES(phase), "
        "last_key = VALUES(last_key), rows_done = rows_done + VALUES(rows_done), updated_at = now()"
    )


_BINARY = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_DECIMAL = frozenset({"decimal", "numeric", "dec", "fixed"})


def _decode_key(value: Any, key_type: str) -> Any:
    """A key value read back from the saved cursor, as the driver returns it for ``key_type``
    (binary keys are bytes again, decimals exact)."""
    if not isinstance(value, str):
        return value
    kind = key_type.lower().split("(")[0].split()[0] if key_type.strip() else ""
    if kind in _BINARY and value.startswith("\\x"):
        return bytes.fromhex(value[2:])
    if kind in _DECIMAL:
        return Decimal(value)
    return value


def batch_sql(dialect: Dialect, job: Job) -> BatchSQL:
    """The statements of ``job`` on the server behind ``dialect``."""
    return MySQLBatchSQL(job) if is_mysql(dialect) else BatchSQL(job)
