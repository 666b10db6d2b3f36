"""A backfill's statements on MySQL 8.0+ and MariaDB 10.6+ (:class:`MySQLBatchSQL`)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, ClassVar

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ...schema.names import BATCH_TABLE, PROGRESS_TABLE
from ..batch import BatchSQL, Fingerprinted, Job
from .ddl import digest_sql, quote


class MySQLBatchSQL(BatchSQL):
    """MySQL 8.0+ and MariaDB 10.6+.

    No arrays, no ``UPDATE ... FROM``, no ``RETURNING`` on updates: a batch is loaded (one
    multi-row INSERT) into a session temporary table whose key columns have the key's own type
    and collation, and joined from there. Unlike a ``JSON_TABLE`` over one JSON document or a
    ``UNION ALL`` of one-row SELECTs (``python -m benchmarks.backfill --strategies`` times all
    three), it needs no JSON or literal spelling of keys: binary keys, collations and 64-bit
    unsigned numbers all arrive as the key's own type.

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
        words = [f"w{j}" for j in range(1, len(job.names.wide_words) + 1)]  # a wide table's words 1-3
        self.create = text(
            f"CREATE TEMPORARY TABLE {self.batch} ("
            + ", ".join(f"{k} {t} NOT NULL" for k, t in zip(keys, job.key_types))
            + "".join(f", {w} BIGINT UNSIGNED NULL" for w in words)
            + f", fp BIGINT UNSIGNED NULL, src CHAR(32) NOT NULL, PRIMARY KEY ({', '.join(keys)}))"
        )
        self.drop = text(f"DROP TEMPORARY TABLE IF EXISTS {self.batch}")
        self.clear = text(f"DELETE FROM {self.batch}")
        columns = [*keys, "fp", "src", *words]
        self.load = text(f"INSERT INTO {self.batch} ({', '.join(columns)}) VALUES ({', '.join(f':{c}' for c in columns)})")
        self.stored = self._stored()

    @staticmethod
    def quote(name: str) -> str:
        return quote(name)

    def text_of(self, column: str) -> str:
        return column  # CHAR(n) is read without its padding, as CONCAT_WS in the digest reads it

    def digest_of(self, columns: Sequence[str], row: str) -> str:
        return digest_sql(columns, row)

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
        return [decode_key(v, t) for v, t in zip(values, self.job.key_types)]

    def is_deadlock(self, error: DBAPIError) -> bool:
        arguments: tuple[Any, ...] = getattr(error.orig, "args", ())
        return bool(arguments) and arguments[0] == self.DEADLOCK_ERROR

    def write_statement(self, keys: list[str]) -> Any:
        job, batch = self.job, self.batch
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        fp, src = self.quote(job.names.fingerprint), self.quote(job.names.digest)
        words = [(f"w{j}", self.quote(w)) for j, w in enumerate(job.names.wide_words, 1)]
        if job.names.side is None:
            # STRAIGHT_JOIN: the batch first, then each of its rows by key. Joined the other way
            # round, the optimizer may scan the (small) table and lock rows outside the batch, so
            # a writer holding any row anywhere stalls the batch until the lock timeout.
            sets = ", ".join([f"b.{c} = v.{v}" for v, c in [("fp", fp), ("src", src), *words]]
                             + [f"b.{self.quote(job.names.part)} = NULL"] * job.lists)
            return text(
                f"UPDATE {batch} AS v STRAIGHT_JOIN {self.base} AS b ON {match} SET {sets} "
                f"WHERE {' OR '.join([f'b.{fp} IS NULL', f'b.{src} IS NULL', *self.unsigned('b')])}"
            )
        side_keys = [self.quote(k) for k in job.names.side_keys(job.keys)]
        values = ", ".join(f"v.k_{i}" for i in range(len(keys)))
        # ON DUPLICATE KEY UPDATE has no WHERE: each assignment keeps the row unless its digest
        # (or a wide table's word 1) is NULL. Assignments run left to right, so the columns the
        # test reads change last: word 1, then the digest.
        keep = " OR ".join([f"{self.side}.{src} IS NULL", *(f"{self.side}.{c} IS NULL" for _, c in words[:1])])
        order = [("fp", fp), *words[1:], *words[:1], ("src", src)]
        updates = ", ".join(f"{c} = IF({keep}, VALUES({c}), {self.side}.{c})" for _, c in order)
        return text(
            f"INSERT INTO {self.side} ({', '.join(side_keys)}, {', '.join(c for _, c in order)}) "
            f"SELECT {values}, {', '.join(f'v.{v}' for v, _ in order)} FROM {batch} AS v STRAIGHT_JOIN {self.base} AS b "
            f"ON {match} WHERE {digest_sql(job.source, 'b.')} = v.src ORDER BY {values} LOCK IN SHARE MODE "
            f"ON DUPLICATE KEY UPDATE {updates}"
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
                {
                    **{f"k_{i}": r.key[i] for i in range(self.key_count)}, "fp": r.fingerprint, "src": r.digest.hex,
                    **{f"w{j}": r.words[j - 1] if r.words else None for j in range(1, len(self.job.names.wide_words) + 1)},
                }
                for r in rows
            ],
        )
        connection.execute(self.write)
        return int(connection.execute(self.stored).scalar_one())

    SAVE_PROGRESS: ClassVar[str] = (
        f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
        "VALUES (:schema, :table, :config, :phase, :last_key, :rows) "
        "ON DUPLICATE KEY UPDATE config_id = VALUES(config_id), phase = VALUES(phase), "
        "last_key = VALUES(last_key), rows_done = rows_done + VALUES(rows_done), updated_at = now()"
    )


_BINARY = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_DECIMAL = frozenset({"decimal", "numeric", "dec", "fixed"})


def decode_key(value: Any, key_type: str) -> Any:
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
