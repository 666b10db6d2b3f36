"""A backfill's statements on PostgreSQL (:class:`PostgresBatchSQL`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..bits import to_signed
from ..schema import PROGRESS_TABLE
from .batch import BatchSQL, Fingerprinted, encode_key
from .postgresql_ddl import digest_sql, quote


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

    def write_statement(self, keys: list[str]) -> Any:
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

    def store(self, connection: Connection, rows: Sequence[Fingerprinted]) -> int:
        params: dict[str, Any] = {f"k_{i}": [r.key[i] for r in rows] for i in range(self.key_count)}
        params["fps"] = [None if r.fingerprint is None else to_signed(r.fingerprint) for r in rows]
        params["srcs"] = [str(r.digest) for r in rows]
        return sum(1 for stored in connection.execute(self.write, params).scalars() if stored)


__all__ = ["PostgresBatchSQL"]
