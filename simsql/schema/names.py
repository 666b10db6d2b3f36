"""Every name simsql gives a database object, and the tables that hold the lifecycle state.

One function builds each name, so the ORM, the migrations, the command line, backfill and
detach cannot drift apart (they used to: index names were cut at 40 characters in one module
and 30 bytes in another, side-table key columns were named differently by two modules).

PostgreSQL silently truncates identifiers to 63 *bytes*; two long names that share their first
63 bytes would then collide. :func:`identifier` applies the one rule: a name that fits is used
as is; a longer one keeps a prefix cut on a UTF-8 character boundary, a digest of the whole
name (so truncated names stay unique) and its full suffix (so ``..._b0`` stays readable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import xxhash
from sqlalchemy import JSON, BigInteger, Boolean, Column, DateTime, Integer, MetaData, String, Table, Text, func
from sqlalchemy.dialects.mysql import LONGTEXT
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from ..text.errors import SchemaError
from ..text.fingerprint import DEFAULT, DEFAULT_WIDE, WIDE_VERSION, Fingerprinter
from ..text.signature import WIDE_WORDS, BlockLayout
from ..text.vectors import AnyFingerprinter, VectorFingerprinter
from .layout import (  # re-exported: the layout is part of the names of an attachment
    ALL_BLOCKS,
    MAX_BLOCK_WIDTH,
    MIN_BLOCK_WIDTH,
    WIDE_LAYOUT,
    WIDE_MODE,
    Mode,
    block_layout,
    layout_text,
    parse_mode,
    wide_mode,
)

MAX_IDENTIFIER_BYTES = 63
"""PostgreSQL's NAMEDATALEN - 1."""

DEFAULT_PREFIX = "simhash"
BLOCK_COUNT = 4
REGISTRY_TABLE = "simsql_registry"
PARTITIONS_TABLE = "simsql_partitions"
CENTRES_TABLE = "simsql_partition_centres"
PROGRESS_TABLE = "simsql_backfill"
BATCH_TABLE = "simsql_backfill_batch"
"""MySQL/MariaDB: the session temporary table a backfill loads each batch into (no arrays there)."""

def check_name(name: str, what: str = "identifier", max_bytes: int | None = MAX_IDENTIFIER_BYTES) -> str:
    """Refuse names PostgreSQL cannot hold (empty, NUL, longer than 63 bytes) before any SQL.
    ``max_bytes=None``: the length is the server's to judge (MySQL/MariaDB count characters)."""
    if not isinstance(name, str) or not name:
        raise SchemaError(f"{what} must be a non-empty string, got {name!r}")
    if "\x00" in name:
        raise SchemaError(f"{what} {name!r} contains a NUL character, which PostgreSQL names cannot hold")
    size = len(name.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise SchemaError(
            f"{what} {name!r} is {size} bytes long; PostgreSQL names hold at most {MAX_IDENTIFIER_BYTES}"
        )
    return name


def _cut(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``limit`` bytes."""
    encoded = text.encode("utf-8", "surrogatepass")[:limit]
    return encoded.decode("utf-8", "ignore")


def identifier(stem: str, suffix: str = "") -> str:
    """``stem + suffix`` if it fits in 63 bytes, else ``<stem cut>_<digest><suffix>``.

    The digest covers the whole untruncated name, so two tables whose long names share a
    prefix still get distinct objects. The result always fits and is deterministic.
    """
    name = stem + suffix
    if len(name.encode("utf-8", "surrogatepass")) <= MAX_IDENTIFIER_BYTES:
        return name
    digest = xxhash.xxh32_hexdigest(name.encode("utf-8", "surrogatepass"))
    room = MAX_IDENTIFIER_BYTES - len(suffix.encode("utf-8", "surrogatepass")) - len(digest) - 1
    if room < 1:
        raise SchemaError(f"suffix {suffix!r} leaves no room for a name")
    return f"{_cut(stem, room)}_{digest}{suffix}"


@dataclass(frozen=True)
class Names:
    """The names of everything simsql creates for one table.

    ``prefix`` names the fingerprint column (``simhash`` by default; choose another when the
    table already has a column of that name). Side-table key columns carry the base table's
    key names, whatever the number of key columns, so every module finds rows the same way.
    """

    table: str
    prefix: str = DEFAULT_PREFIX
    side: str | None = None
    stage: str = ""
    """Empty for an attachment; ``"_next"`` for the shadow set a refingerprint fills (its
    trigger functions must not collide with the attachment's own)."""
    wide: bool = False
    """The table also stores the wide 256-bit signature (:mod:`simsql.text.signature`): words 1-3
    beside the fingerprint (word 0) and one indexed column per block of :attr:`layout`."""
    layout: BlockLayout = field(default=WIDE_LAYOUT)
    """How a wide table's signature is cut into indexed blocks (:data:`WIDE_LAYOUT` unless the
    attachment chose another, ``wide_blocks=``); meaningless unless ``wide``."""

    def __post_init__(self) -> None:
        # the table's length is its server's to judge (Backend.check_identifier: PostgreSQL 63
        # bytes, MySQL/MariaDB 64 characters); every name simsql derives from it fits both
        check_name(self.table, "table name", max_bytes=None)
        check_name(self.prefix, "column prefix")
        # the longest derived column is <prefix>_src / <prefix>_b0
        if len(self.prefix.encode("utf-8", "surrogatepass")) > MAX_IDENTIFIER_BYTES - 4:
            raise SchemaError(f"column prefix {self.prefix!r} is too long (at most 59 bytes)")
        if self.side is not None:
            check_name(self.side, "side table name")
        if not isinstance(self.layout, BlockLayout) or block_layout(self.layout) != self.layout:
            raise SchemaError(f"layout must be a BlockLayout, got {self.layout!r}")

    @classmethod
    def for_table(
        cls, table: str, prefix: str = DEFAULT_PREFIX, mode: Mode = "columns", *, wide: bool = False,
        layout: BlockLayout = WIDE_LAYOUT,
    ) -> Names:  # fmt: skip
        """The names a new attachment of ``table`` gets in ``mode`` (``wide``: with the wide
        signature, cut into the blocks of ``layout``)."""
        side = default_side_table(table, prefix) if mode == "side_table" else None
        return cls(table, prefix, side, wide=wide, layout=layout)

    @property
    def mode(self) -> Mode:
        return "side_table" if self.side else "columns"

    @property
    def recorded_mode(self) -> str:
        """What the registry's ``mode`` records: :attr:`mode`, plus :func:`wide_mode` when wide."""
        return self.mode + (wide_mode(self.layout) if self.wide else "")

    @property
    def holder(self) -> str:
        """The table holding fingerprint and blocks."""
        return self.side or self.table

    @property
    def fingerprint(self) -> str:
        return self.prefix

    @property
    def digest(self) -> str:
        """md5 of the text the fingerprint was computed from (``uuid``), compared by the database."""
        return f"{self.prefix}_src"

    @property
    def blocks(self) -> tuple[str, ...]:
        return tuple(f"{self.prefix}_b{i}" for i in range(BLOCK_COUNT))

    @property
    def wide_words(self) -> tuple[str, ...]:
        """Words 1-3 of the wide signature (word 0 is :attr:`fingerprint`); empty unless ``wide``."""
        return tuple(f"{self.prefix}_w{k}" for k in range(1, WIDE_WORDS)) if self.wide else ()

    @property
    def signature_words(self) -> tuple[str, ...]:
        """All four words of the wide signature, word 0 first (the fingerprint); empty unless ``wide``."""
        return (self.fingerprint, *self.wide_words) if self.wide else ()

    @property
    def wide_blocks(self) -> tuple[str, ...]:
        """The wide signature's block columns (``<prefix>_v0`` ...); empty unless ``wide``."""
        return tuple(f"{self.prefix}_v{i}" for i in range(self.layout.count)) if self.wide else ()

    @property
    def wide_indexes(self) -> tuple[str, ...]:
        return tuple(self.index(block) for block in self.wide_blocks)

    @property
    def indexed_blocks(self) -> tuple[str, ...]:
        """Every block column with an index: the four 16-bit blocks, then the wide ones."""
        return (*self.blocks, *self.wide_blocks)

    def covered(self, block: str) -> tuple[str, ...]:
        """The columns block ``block``'s index covers besides the key: the fingerprint, or
        all four words for a wide block (a probe then computes the 256-bit distance from the
        index alone)."""
        return self.signature_words if block in self.wide_blocks else (self.fingerprint,)

    @property
    def added_columns(self) -> tuple[str, ...]:
        """Columns simsql adds to the holder table (in columns mode: to the user's table)."""
        return (self.fingerprint, self.digest, *self.blocks, *self.wide_words, *self.wide_blocks)

    def side_keys(self, keys: Sequence[str]) -> tuple[str, ...]:
        return tuple(keys)

    @property
    def row_function(self) -> str:
        """Trigger function (and trigger) that derives blocks and drops stale fingerprints."""
        return identifier(f"simsql_{self.table}", f"_blocks{self.stage}")

    @property
    def stale_function(self) -> str:
        """Side-table mode: trigger on the user's table that deletes side rows gone stale."""
        return identifier(f"simsql_{self.table}", f"_stale{self.stage}")

    @property
    def row_triggers(self) -> tuple[str, str]:
        """MySQL/MariaDB: the row rule as two triggers, before insert and before update (no
        trigger there fires on both, and triggers need no function)."""
        return identifier(f"simsql_{self.table}", "_blocks_ins"), identifier(f"simsql_{self.table}", "_blocks_upd")

    @property
    def words_triggers(self) -> tuple[str, str]:
        """MySQL/MariaDB, a wide table in columns mode: before insert and before update, after
        the row rule, clearing words 1-3 when it left no fingerprint (they go with their word 0)."""
        return identifier(f"simsql_{self.table}", "_words_ins"), identifier(f"simsql_{self.table}", "_words_upd")

    @property
    def widen_trigger(self) -> str:
        """MySQL/MariaDB, while a refingerprint adds the wide signature in place: before update,
        clears words 1-3 a writer without them left beside a new fingerprint or digest."""
        return identifier(f"simsql_{self.table}", "_widen_upd")

    @property
    def functions(self) -> tuple[str, ...]:
        return (self.row_function, self.stale_function)

    def shadow(self, wide: bool | None = None, layout: BlockLayout | None = None) -> Names:
        """The names of the second fingerprint set a refingerprint fills beside this one (same
        table, prefix ``<prefix>_next``, side table ``<side>_next``), renamed to these at its
        switch. ``wide``: whether the new set has the wide signature, ``layout`` its blocks
        (default: as this one)."""
        side = identifier(self.side, "_next") if self.side else None
        return Names(
            self.table, f"{self.prefix}_next", side, "_next", self.wide if wide is None else wide,
            self.layout if layout is None else layout,
        )  # fmt: skip

    def with_wide(self, wide: bool, layout: BlockLayout | None = None) -> Names:
        """These names with (or without) the wide signature: an attachment's after a move to
        (or from) algorithm version 3 (``layout``: its blocks; default as these)."""
        return Names(self.table, self.prefix, self.side, self.stage, wide, self.layout if layout is None else layout)

    @property
    def refingerprint_cursor(self) -> str:
        """Key of an unfinished refingerprint's cursor in ``simsql_backfill`` (beside the
        table's own backfill cursor); its row proves the shadow set is simsql's."""
        return f"{self.table}#refingerprint"

    @property
    def set_aside_marker(self) -> str:
        """Key of the row in ``simsql_backfill`` that says a move to version 3 dropped the block
        indexes to add its columns and has not built them again yet (MariaDB): a run that
        resumes, or abandons, the move builds them again; without the row, none is built (a
        table attached without indexes stays so)."""
        return f"{self.table}#set-aside"

    def index(self, block: str) -> str:
        return self.index_on(self.holder, block)

    @staticmethod
    def index_on(relation: str, block: str) -> str:
        """Block index on ``relation`` (the holder, or one partition of a partitioned holder)."""
        return identifier(f"ix_{relation}", f"_{block}")

    @property
    def part(self) -> str:
        """The partition list column (``<prefix>_part``, an integer): the list of the row's
        nearest centre (:mod:`simsql.text.lists`); NULL until placed. Only on a table
        with partition lists."""
        return f"{self.prefix}_part"

    @property
    def part_index(self) -> str:
        """The covering index of the partition lists: the list, then the key and the signature
        words, so a probed list is ranked from the index alone."""
        return self.index_on(self.holder, self.part)

    @property
    def vector_index(self) -> str:
        """pgvector's HNSW index on the table's vector (its source column, or that column cast to
        ``vector(d)``): created by :func:`simsql.lifecycle.add_vector_index`, dropped by detach."""
        return self.index_on(self.table, f"{self.prefix}_hnsw")

    @property
    def part_covered(self) -> tuple[str, ...]:
        """What :attr:`part_index` covers besides the list and the key: every signature word."""
        return self.signature_words or (self.fingerprint,)

    @property
    def indexes(self) -> tuple[str, ...]:
        """Every block index simsql creates on the holder, in :attr:`indexed_blocks` order."""
        return tuple(self.index(block) for block in self.indexed_blocks)


def configuration_for(fingerprinter: Fingerprinter | None, wide: bool | None) -> Fingerprinter:
    """The configuration of a table that stores the wide signature (``wide=True``) or not
    (``False``; ``None``: as ``fingerprinter`` says). Without a ``fingerprinter``, the default of
    that kind (:data:`~simsql.text.fingerprint.DEFAULT_WIDE` or :data:`~simsql.text.fingerprint.DEFAULT`). The signature is part of version 3, so a
    ``wide`` that contradicts the given configuration is refused rather than stored half."""
    if fingerprinter is None:
        return DEFAULT_WIDE if wide else DEFAULT
    if wide is not None and wide != fingerprinter.wide:
        if wide:
            raise ValueError(
                f"the wide signature is part of algorithm version {WIDE_VERSION}; this configuration is version "
                f"{fingerprinter.version}: pass Fingerprinter(version={WIDE_VERSION}, ...) with the same settings"
            )
        raise ValueError(
            f"a version {fingerprinter.version} configuration includes the wide signature; pass wide=True "
            "(or leave it out), or a version 2 configuration for a table without it"
        )
    return fingerprinter


def attached_configuration(fingerprinter: AnyFingerprinter | None, wide: bool | None) -> tuple[AnyFingerprinter, bool]:
    """The configuration a table is attached with and whether it stores the wide signature: a
    vector configuration has no wide signature of its own (its table is wide when ``wide`` says
    so); a text one, or none, as :func:`configuration_for` rules. The one rule every attaching
    face (:mod:`simsql.lifecycle.attach`, the Alembic operations) follows."""
    if isinstance(fingerprinter, VectorFingerprinter):
        return fingerprinter, bool(wide)
    configuration = configuration_for(fingerprinter, wide)
    return configuration, configuration.wide


def default_side_table(table: str, prefix: str = DEFAULT_PREFIX) -> str:
    return identifier(f"{table}_{prefix}")


# -- lifecycle state ----------------------------------------------------------------------

metadata = MetaData()

# PostgreSQL gets what simsql's first migration created (text, jsonb, text[]); MySQL/MariaDB,
# which have neither jsonb nor arrays nor unbounded text keys, get JSON and VARCHAR(64) (their
# longest identifier) in the same places.
_MYSQL = ("mysql", "mariadb")
_NAME = Text().with_variant(String(64), *_MYSQL)
_JSON = JSON().with_variant(JSONB(), "postgresql")
_TEXTS = JSON().with_variant(ARRAY(Text), "postgresql")

registry_table = Table(
    REGISTRY_TABLE,
    metadata,
    Column("table_schema", _NAME, primary_key=True),
    Column("table_name", _NAME, primary_key=True),
    Column("column_name", _NAME, primary_key=True),
    Column("config_id", Text, nullable=False),
    Column("settings", _JSON, nullable=False),
    Column("source", _TEXTS, nullable=False),
    Column("mode", Text, nullable=False),
    Column("side_table", Text, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
"""One row per attached table: configuration, text columns, storage mode. ``column_name``
holds the column prefix."""

progress_table = Table(
    PROGRESS_TABLE,
    metadata,
    Column("table_schema", _NAME, primary_key=True),
    Column("table_name", _NAME, primary_key=True),
    Column("config_id", Text, nullable=False),
    Column("phase", Text, nullable=False),
    Column("last_key", _JSON, nullable=True),
    Column("rows_done", BigInteger, nullable=False, server_default="0"),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
"""Backfill cursors, so an interrupted backfill resumes after its last committed batch."""


partitions_table = Table(
    PARTITIONS_TABLE,
    metadata,
    Column("table_schema", _NAME, primary_key=True),
    Column("table_name", _NAME, primary_key=True),
    Column("generation", Integer, primary_key=True, autoincrement=False),
    Column("state", String(16), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("lists", Integer, nullable=False),
    Column("settings", _JSON, nullable=False),
    Column("added_objects", Boolean, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
"""One row per generation of partition centres of a table: ``filling`` while rows move into
its lists (queries probe it and the generation it replaces), ``current`` once every row is in
it. ``settings``: the fit's seed, sample size, iterations and configuration; ``added_objects``:
whether simsql added the list column and its index (detach then drops them)."""

centres_table = Table(
    CENTRES_TABLE,
    metadata,
    Column("table_schema", _NAME, primary_key=True),
    Column("table_name", _NAME, primary_key=True),
    Column("generation", Integer, primary_key=True, autoincrement=False),
    Column("list_value", Integer, primary_key=True, autoincrement=False),
    Column("centre", BigInteger, nullable=True),
    Column("vector", Text().with_variant(LONGTEXT(), *_MYSQL), nullable=True),
)
"""The centres of each generation, one row a list: ``centre`` a fingerprint (signed, as
stored), or ``vector`` a unit vector as the base64 text of its little-endian float64 values
(text, not bytes: every driver writes it alike, aiomysql included). A text query ranks its lists
by ``centre`` in SQL."""


def record_values(
    schema: str,
    table_name: str,
    fingerprinter: AnyFingerprinter,
    source: Sequence[str],
    mode: str,
    side_table: str | None,
    column_name: str,
) -> dict[str, Any]:
    """One :data:`registry_table` row as column values: what every writer of the registry
    (the ORM's first write, ``attach``'s DDL plan on each server) records."""
    return {
        "table_schema": schema,
        "table_name": table_name,
        "column_name": column_name,
        "config_id": fingerprinter.config_id,
        "settings": fingerprinter.settings,
        "source": list(source),
        "mode": mode,
        "side_table": side_table,
    }


@dataclass(frozen=True)
class Attachment:
    """One registry row: a fingerprinted table, how and with which configuration."""

    table_schema: str
    table_name: str
    column_name: str
    config_id: str
    settings: dict[str, Any]
    source: tuple[str, ...]
    mode: str
    side_table: str | None

    @property
    def names(self) -> Names:
        layout = self.layout
        return Names(self.table_name, self.column_name, self.side_table, wide=layout is not None, layout=layout or WIDE_LAYOUT)

    @property
    def wide(self) -> bool:
        """Whether the table also stores the wide signature (recorded in ``mode``)."""
        return self.layout is not None

    @property
    def layout(self) -> BlockLayout | None:
        """The wide signature's block layout (recorded in ``mode``: :func:`parse_mode`); None
        when the table has no wide signature."""
        return parse_mode(self.mode)[1]

    @property
    def prefix(self) -> str:
        return self.column_name


__all__ = [
    "ALL_BLOCKS",
    "Attachment",
    "BATCH_TABLE",
    "BLOCK_COUNT",
    "CENTRES_TABLE",
    "DEFAULT_PREFIX",
    "MAX_BLOCK_WIDTH",
    "MAX_IDENTIFIER_BYTES",
    "MIN_BLOCK_WIDTH",
    "Names",
    "PARTITIONS_TABLE",
    "PROGRESS_TABLE",
    "REGISTRY_TABLE",
    "WIDE_LAYOUT",
    "WIDE_MODE",
    "attached_configuration",
    "block_layout",
    "check_name",
    "configuration_for",
    "default_side_table",
    "identifier",
    "layout_text",
    "parse_mode",
    "wide_mode",
    "centres_table",
    "metadata",
    "partitions_table",
    "progress_table",
    "record_values",
    "registry_table",
]
