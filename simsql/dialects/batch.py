"""The statements of a backfill job: what every server's :class:`BatchSQL` answers.

:mod:`simsql.lifecycle.backfill` owns the flow (batches, workers, retries, resume) and never
looks at SQL; a backend gives it one :class:`BatchSQL` per job
(:meth:`simsql.dialects.Backend.batch_sql`). Each one answers the same questions: which rows
still lack a fingerprint after a cursor (their sizes first, then their keys and texts), how to
store a batch so that only rows still holding the text they were computed from keep one, and
how to keep the resume cursor. So the guarantees listed in :mod:`simsql.lifecycle.backfill`
hold on every server alike.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..schema.names import Names
from ..text.vectors import AnyFingerprinter, VectorFingerprinter


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
    fingerprinter: AnyFingerprinter
    cursor: str | None = None
    """Key of the resume cursor in ``simsql_backfill`` (default: the table's name)."""
    lists: bool = False
    """The holder has a partition list column: a row whose fingerprint a batch writes leaves
    its list (NULL: read by every query until placed again in the list of its new fingerprint)."""

    @property
    def cursor_key(self) -> str:
        return self.cursor or self.table

    @property
    def vector(self) -> bool:
        """The source is one vector column (a :class:`~simsql.VectorFingerprinter` signs it)."""
        return isinstance(self.fingerprinter, VectorFingerprinter)


class Fingerprinted(NamedTuple):
    """One row of a batch to store: its key, its fingerprint (None: the text has no
    features; stored only in side-table mode, so the row is not read again) and the digest of
    the text it was computed from."""

    key: Sequence[Any]
    fingerprint: int | None
    digest: uuid.UUID
    words: Sequence[int] = ()
    """A wide table's signature words 1-3 (empty without a fingerprint, or on a 64-bit table)."""


def encode_key(value: Any) -> Any:
    """A key value as JSON (``\\x``-prefixed hex for binary, text for dates, decimals, UUIDs)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class BatchSQL(ABC):
    """The statements of one :class:`Job` on one server. The reads (``sizes``, ``rows``,
    ``count``) are built here from the subclass's spelling; the write, the cursor's form and
    the deadlock test are the subclass's."""

    SAVE_PROGRESS: ClassVar[str]
    """Upsert of the job's cursor row (``:schema, :table, :config, :phase, :last_key, :rows``)."""

    side: str
    """The quoted side table (side-table mode only)."""

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
            holder = "b"
            source_from = f"{self.base} AS b"
            missing = f"b.{self.quote(names.fingerprint)} IS NULL OR b.{self.quote(names.digest)} IS NULL"
        else:
            holder = "s"
            self.side = f"{self.quote(job.schema)}.{self.quote(names.side)}"
            side_keys = [self.quote(k) for k in names.side_keys(job.keys)]
            join = " AND ".join(f"s.{s} = b.{k}" for s, k in zip(side_keys, keys))
            source_from = f"{self.base} AS b LEFT JOIN {self.side} AS s ON {join}"
            missing = f"s.{side_keys[0]} IS NULL OR s.{self.quote(names.digest)} IS NULL"
        # a wide table's fingerprint stored without its signature (a writer that knows only the
        # 64 bits) is fingerprinted again, words and all
        missing = f"({' OR '.join([missing, *self.unsigned(holder)])})"
        if job.vector:
            # A vector is read as the driver returns it, with the server's digest of it (what the
            # trigger compares); a NULL vector has no signature, so it is never read.
            column = f"b.{self.quote(job.source[0])}"
            missing = f"{missing} AND {column} IS NOT NULL"
            size = f"coalesce({self.size_of(column)}, 0)"
            texts = f"{column}, {self.digest_of(job.source, 'b.')}"
        else:
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
        self.write = self.write_statement(keys)

    def unsigned(self, holder: str) -> list[str]:
        """On a wide table: the condition that ``holder``'s row has a fingerprint but not its
        signature's words (word 1 stands for all three: the triggers clear them together);
        else nothing."""
        names = self.job.names
        if not names.wide:
            return []
        return [f"({holder}.{self.quote(names.fingerprint)} IS NOT NULL AND {holder}.{self.quote(names.wide_words[0])} IS NULL)"]

    # -- spelling ------------------------------------------------------------------------------

    @staticmethod
    @abstractmethod
    def quote(name: str) -> str:
        """An identifier, quoted as this server quotes it."""

    @abstractmethod
    def text_of(self, column: str) -> str:
        """A source column as text, the way the digest reads it."""

    @abstractmethod
    def digest_of(self, columns: Sequence[str], row: str) -> str:
        """The digest of a row's source columns, as the triggers compute it."""

    def size_of(self, column: str) -> str:
        """The bytes a vector column's value takes (for ``max_batch_bytes``)."""
        return f"octet_length({column})"

    @abstractmethod
    def after(self, keys: Sequence[str]) -> str:
        """Rows after the cursor ``:last_0, :last_1, ...`` in key order."""

    @abstractmethod
    def cursor_params(self, cursor: Sequence[Any]) -> dict[str, Any]:
        """The cursor's values as the bound parameters :meth:`after` reads."""

    def resume_cursor(self, stored: Any) -> list[Any] | None:
        """The cursor saved by :meth:`save_progress`, as :meth:`cursor_params` takes it."""
        if stored is None:
            return None
        return list(json.loads(stored) if isinstance(stored, (str, bytes)) else stored)

    @abstractmethod
    def is_deadlock(self, error: DBAPIError) -> bool:
        """Whether ``error`` says the server rolled the batch back to break a deadlock."""

    # -- writing -------------------------------------------------------------------------------

    @abstractmethod
    def write_statement(self, keys: list[str]) -> Any:
        """The statement that stores a batch (``keys``: the quoted key columns)."""

    def prepare(self, connection: Connection) -> None:
        """Before the first :meth:`store` on ``connection`` (nothing by default)."""

    def release(self, connection: Connection) -> None:
        """After the last :meth:`store` on ``connection`` (nothing by default)."""

    @abstractmethod
    def store(self, connection: Connection, rows: Sequence[Fingerprinted]) -> int:
        """Store ``rows`` where the row still holds the text of its digest, in the
        connection's transaction; returns how many fingerprints were stored."""

    # -- the cursor ------------------------------------------------------------------------------

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


__all__ = ["BatchSQL", "Fingerprinted", "Job", "encode_key"]
