"""A backfill's statements on PostgreSQL (:class:`PostgresBatchSQL`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ...schema.names import PROGRESS_TABLE
from ...text.bits import to_signed
from ..batch import BatchSQL, Fingerprinted, encode_key
from .ddl import digest_sql, quote


class PostgresBatchSQL(BatchSQL):
    """Key values travel as text cast to the key's own type (a cursor over ``bytea`` or
    ``uuid`` keys resumes exactly); a batch is stored in one statement over ``unnest()``
    arrays, in side-table mode reading the user's rows ``FOR SHARE``."""

    DEADLOCK_STATE = "40P01"

    SAVE_PROGRESS: ClassVar[str] = (
        f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase, last_key, rows_done) "
        "VALUES (:schema, :table, :config, :phase, CAST(:last_key AS jsonb), :rows) "
        "ON CONFLICT (table_schema, table_name) DO UPDATE SET config_id = excluded.config_id, phase = excluded.phase, "
        f"last_key = excluded.last_key, rows_done = {PROGRESS_TABLE}.rows_done + excluded.rows_done, updated_at = now()"
    )

    @staticmethod
    def quote(name: str) -> str:
        return quote(name)

    def text_of(self, column: str) -> str:
        """(char(n) loses its padding here, as in the digest.)"""
        return f"CAST({column} AS text)"

    def digest_of(self, columns: Sequence[str], row: str) -> str:
        return digest_sql(columns, row)

    def size_of(self, column: str) -> str:
        """Any type (an array, pgvector's ``vector``, ``bytea``): its stored size."""
        return f"pg_column_size({column})"

    def after(self, keys: Sequence[str]) -> str:
        # the cursor is bound as text (cursor_params) and cast from text: asyncpg types a
        # parameter by its cast and refuses a str for "CAST($1 AS integer)"
        last = [f"CAST(CAST(:last_{i} AS text) AS {t})" for i, t in enumerate(self.job.key_types)]
        if len(keys) > 1:
            return f"({self.key_list}) > ({', '.join(last)})"
        return f"b.{keys[0]} > {last[0]}"

    def cursor_params(self, cursor: Sequence[Any]) -> dict[str, Any]:
        return {f"last_{i}": None if v is None else str(encode_key(v)) for i, v in enumerate(cursor)}

    def is_deadlock(self, error: DBAPIError) -> bool:
        return getattr(error.orig, "sqlstate", None) == self.DEADLOCK_STATE

    def write_statement(self, keys: list[str], pinned: int | None = None) -> Any:
        """The batch's store. ``pinned``: the index of a key column whose values the statement
        also names as a list (``b.<key> = ANY(:k_<i>)``), and in side-table mode the keys are
        then inserted from the user's row: what lets a distributing server (Citus) route the
        statement to the shards holding those keys, rather than run it on every shard."""
        job = self.job
        words = [self.quote(w) for w in job.names.wide_words]  # a wide table's words 1-3
        arrays = ", ".join(
            [f"CAST(:k_{i} AS {t}[])" for i, t in enumerate(job.key_types)]
            + ["CAST(:fps AS bigint[])", "CAST(:srcs AS uuid[])"] + [f"CAST(:w{j} AS bigint[])" for j in range(1, len(words) + 1)]
        )
        values = [("fp", self.quote(job.names.fingerprint)), ("src", self.quote(job.names.digest))]
        values += [(f"w{j}", word) for j, word in enumerate(words, 1)]
        columns = ", ".join([f"k_{i}" for i in range(len(keys))] + [v for v, _ in values])
        match = " AND ".join(f"b.{k} = v.k_{i}" for i, k in enumerate(keys))
        if pinned is not None:
            match += f" AND b.{keys[pinned]} = ANY(CAST(:k_{pinned} AS {job.key_types[pinned]}[]))"
        fp, src = values[0][1], values[1][1]
        if job.names.side is None:
            # The row trigger keeps the fingerprint only if src is the digest of the row's text.
            sets = ", ".join([f"{column} = v.{v}" for v, column in values] + [f"{self.quote(job.names.part)} = NULL"] * job.lists)
            return text(
                f"UPDATE {self.base} AS b SET {sets} FROM unnest({arrays}) AS v({columns}) "
                f"WHERE {match} AND ({' OR '.join([f'b.{fp} IS NULL', f'b.{src} IS NULL', *self.unsigned('b')])}) "
                f"RETURNING b.{fp} IS NOT NULL"
            )
        side_keys = ", ".join(self.quote(k) for k in job.names.side_keys(job.keys))
        keys_of_v = ", ".join(f"v.k_{i}" if pinned is None else f"b.{k}" for i, k in enumerate(keys))
        refill = " OR ".join([f"{self.side}.{src} IS NULL", *self.unsigned(self.side)])
        return text(
            f"INSERT INTO {self.side} ({side_keys}, {', '.join(c for _, c in values)}) "
            f"SELECT {keys_of_v}, {', '.join(f'v.{v}' for v, _ in values)} FROM unnest({arrays}) AS v({columns}) "
            f"JOIN {self.base} AS b ON {match} WHERE {digest_sql(job.source, 'b.')} = v.src "
            f"ORDER BY {keys_of_v} FOR SHARE OF b "
            f"ON CONFLICT ({side_keys}) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for _, c in values)} "
            f"WHERE {refill} RETURNING {fp} IS NOT NULL"
        )

    def store(self, connection: Connection, rows: Sequence[Fingerprinted]) -> int:
        return self.store_with(connection, self.write, rows)

    def store_with(self, connection: Connection, statement: Any, rows: Sequence[Fingerprinted]) -> int:
        """``rows`` stored by ``statement`` (a :meth:`write_statement`)."""
        params: dict[str, Any] = {f"k_{i}": [r.key[i] for r in rows] for i in range(self.key_count)}
        params["fps"] = [None if r.fingerprint is None else to_signed(r.fingerprint) for r in rows]
        params["srcs"] = [str(r.digest) for r in rows]
        for j in range(1, len(self.job.names.wide_words) + 1):
            params[f"w{j}"] = [to_signed(r.words[j - 1]) if r.words else None for r in rows]
        return sum(1 for stored in connection.execute(statement, params).scalars() if stored)


__all__ = ["PostgresBatchSQL"]
