"""Read what the DDL needs from the server's catalog, and nothing else.

The catalog step is separate from describing DDL (the backend's describer, `backend(bind).ddl`) so that an
offline mode can supply the same facts from arguments. The queries themselves differ per server
(``pg_class`` / ``information_schema``) and belong to the backend
(:class:`simsql.dialects.Backend`); every one names the table by a bound value, never by
formatting it into SQL.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import MetaData, Table, inspect, orm, text
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.ddl_plan import Column, Partition, Present, TableFacts, TableShape
from ..schema.names import ALL_BLOCKS, DEFAULT_PREFIX, Attachment, Names
from ..store import registry
from ..store.storage import Binding, join_text, register
from ..text.errors import NotAttached, SchemaError


def table_facts(connection: Connection, table: str, schema: str) -> TableFacts | None:
    """The catalog's description of ``schema.table``, or None when there is no such table."""
    return backend(connection).table_facts(connection, schema, table)


def require_table(connection: Connection, table: str, schema: str | None) -> TableFacts:
    backend(connection).check_identifier(table, "table name")
    schema = schema or registry.current_schema(connection)
    facts = table_facts(connection, table, schema)
    if facts is None:
        raise SchemaError(f"table {schema}.{table} does not exist")
    return facts


_VECTOR_TYPES = ("[]", "bytea", "vector", "halfvec", "json", "jsonb", "blob", "varbinary", "binary", "text")
"""How the catalogs spell a column a vector can be read from (by the end of the type's name,
its length or dimensions cut off): arrays, pgvector's ``vector``, JSON (MariaDB's is a
``longtext``), bytes of float32."""


def holds_vectors(column: Column) -> bool:
    """Whether ``column``'s type can hold a vector simsql reads (:data:`_VECTOR_TYPES`)."""
    spelled = column.type.lower().split("(")[0].strip()
    return column.is_text or spelled.endswith(_VECTOR_TYPES)


def describe(
    connection: Connection, table: str, source: Sequence[str], schema: str | None = None, *, vector: bool | None = False
) -> TableShape:
    """Read a table's key and check its source columns exist and hold text (``vector``: one
    column that can hold a vector; None: that they exist, whatever their type)."""
    backend(connection).check_server(connection)
    if isinstance(source, str):
        source = [source]
    if not source:
        raise SchemaError("name at least one text column to fingerprint")
    facts = require_table(connection, table, schema)
    for name in source:
        column = facts.columns.get(name)
        if column is None:
            raise SchemaError(
                f"table {facts.schema}.{table} has no column {name!r} (columns: {', '.join(sorted(facts.columns))})"
            )
        if vector and (len(source) != 1 or not holds_vectors(column)):
            raise SchemaError(
                f"column {facts.schema}.{table}.{name} is {column.type}: a vector is read from one array, vector, "
                "JSON or float32 bytes column"
            )
        if vector is False and not column.is_text:
            raise SchemaError(f"column {facts.schema}.{table}.{name} is {column.type}, not text")
    if not facts.keys:
        raise SchemaError(f"table {facts.schema}.{table} has no primary key; simsql needs one to find rows again")
    return TableShape(facts.schema, table, facts.keys, facts.key_types, tuple(source))


def has_rows(connection: Connection, schema: str, table: str) -> bool:
    """Whether ``schema.table`` holds a row (one index or heap probe, whatever its size)."""
    server = backend(connection)
    return connection.execute(text(f"SELECT 1 FROM {server.qualified(schema, table)} LIMIT 1")).first() is not None


@dataclass(frozen=True)
class IndexState:
    """What a describer's ``create_indexes`` needs: the holder's key columns and
    the indexes a failed concurrent build left invalid."""

    holder_keys: tuple[str, ...]
    invalid: tuple[str, ...]


def index_state(connection: Connection, schema: str, names: Names) -> IndexState:
    holder = table_facts(connection, names.holder, schema)
    if holder is None:
        raise SchemaError(f"{schema}.{names.holder} does not exist; attach simsql first")
    invalid = backend(connection).invalid_indexes(connection, schema, names.indexes)
    return IndexState(holder.keys, invalid)


def index_names(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    """Names of the indexes on ``schema.table`` (MySQL: ``PRIMARY`` included)."""
    return backend(connection).index_names(connection, schema, table)


def schema_triggers(connection: Connection, schema: str) -> dict[str, str]:
    """Every trigger of ``schema`` and its table (on MySQL/MariaDB trigger names are unique
    per schema, not per table, so a name is taken whichever table holds it)."""
    return backend(connection).schema_triggers(connection, schema)


def present(
    connection: Connection, schema: str, table: str, names: Names, *, recorded: bool = False, partitions: bool = False
) -> Present:
    """What of the attachment ``names`` of ``schema.table`` exists now: what an attach that
    stopped halfway left, which block indexes to build, what a detach drops. ``partitions``:
    read the partitions of a partitioned holder too (for builds partition by partition)."""
    server = backend(connection)
    triggers = server.triggers_on(connection, schema, table)
    holder = table_facts(connection, names.holder, schema)
    if holder is None:
        return Present.of(triggers=triggers, recorded=recorded, fold=server.folds_names)
    tree = server.partition_tree(connection, schema, names.holder) if partitions and holder.kind == "p" else []
    return Present.of(
        holder.columns, triggers, server.index_names(connection, schema, names.holder), names.side is not None, recorded,
        holder=True, invalid=server.invalid_indexes(connection, schema, names.indexes), partitions=tree,
        fold=server.folds_names,
    )  # fmt: skip


def attachment(connection: Connection, table: str, schema: str | None) -> tuple[str, Names]:
    """Schema and names of an attached table, from the registry."""
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema)
    if entry is None:
        raise SchemaError(f"{schema}.{table} is not attached to simsql; run add_simhash first")
    return schema, entry.names


def reflect(connection: Connection, table: str, schema: str | None = None) -> type:
    """A mapped class for a table attached by a migration or the CLI, for tools without an ORM
    model of their own (the command line, scripts). Queries accept it like any model; on a wide
    attachment (``attach_table(..., wide=True)``) :func:`simsql.find_original` takes the wide
    path, as on a ``WideSimHashMixin`` model."""
    schema_name = schema or registry.current_schema(connection)
    entry = registry.read(connection, table, schema_name)
    if entry is None:
        raise not_attached(schema_name, table)
    names = entry.names
    metadata = MetaData()
    base = Table(table, metadata, autoload_with=connection, schema=schema_name)
    holder = Table(names.side, metadata, autoload_with=connection, schema=schema_name) if names.side else base
    model = type(f"Reflected_{table}", (), {"__repr__": lambda self: f"<{table} {inspect(self).identity}>"})
    orm.registry(metadata=metadata).map_imperatively(model, base)
    keys: tuple[Any, ...] = tuple(inspect(model).primary_key)
    key_names = names.side_keys([k.name for k in keys]) if names.side else [k.name for k in keys]
    _require_columns(connection, entry, holder, key_names)
    register(
        model,
        Binding(
            model=model,
            mode=names.mode,
            table=holder,
            fingerprint=holder.c[names.fingerprint],
            blocks=tuple(holder.c[name] for name in names.blocks),
            keys=keys,
            table_keys=tuple(holder.c[k] for k in key_names),
            source=tuple(entry.source),
            fingerprinter=registry.fingerprinter_from_settings(entry.settings),
            names=names,
            words=tuple(holder.c[name] for name in names.signature_words),
            wide_blocks=tuple(holder.c[name] for name in names.wide_blocks),
        ),
    )
    return model


def _require_columns(connection: Connection, entry: Attachment, holder: Table, key_names: Sequence[str]) -> None:
    """Refuse (:class:`SchemaError`) a holder that lacks some of simsql's columns: a table
    replaced outside simsql, or an attach that stopped halfway (MySQL/MariaDB run each ALTER on
    its own), each with the command that fixes it."""
    names = entry.names
    wanted = (names.fingerprint, names.digest, *names.blocks, *names.wide_words, *names.wide_blocks, *key_names)
    missing = [name for name in wanted if name not in holder.c]
    if not missing:
        return
    if attachment_state(connection, entry) == REPLACED:
        raise SchemaError(replaced_message(entry))
    words = ["simsql", "attach", "--table", entry.table_name, "--schema", entry.table_schema]
    for column in entry.source:
        words += ["--text-column", column]
    words += ["--side-table"] if names.side else []
    words += ["--prefix", names.prefix] if names.prefix != DEFAULT_PREFIX else []
    raise SchemaError(
        f"{entry.table_schema}.{names.holder} lacks simsql's {', '.join(missing)}: an attach that stopped before it "
        f"finished. Run `{shlex.join(words)}` (simsql.attach_table) again to finish it"
    )


def partition_tree(connection: Connection, table: str, schema: str) -> list[Partition]:
    """(relation, parent, is_leaf) of a partitioned table, parents first, where the server
    builds indexes partition by partition (see :meth:`simsql.dialects.Backend.partition_tree`)."""
    return backend(connection).partition_tree(connection, schema, table)


def dependents(connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
    """Objects that depend on ``columns`` of ``schema.table`` (or on the whole table when
    ``columns`` is empty), other than simsql's ``own`` indexes: a view, a user's index, a
    foreign key. Dropping them would harm someone else's state."""
    return backend(connection).dependents(connection, schema, table, columns, own)


GONE = "gone"
REPLACED = "replaced"


def attachment_state(connection: Connection, entry: Attachment) -> str:
    """``"attached"``, or what happened to the table outside simsql: ``"gone"`` (no such table)
    or ``"replaced"`` (a table of that name without simsql's fingerprint column or side table)."""
    facts = table_facts(connection, entry.table_name, entry.table_schema)
    if facts is None:
        return GONE
    names = entry.names
    holder = facts if names.side is None else table_facts(connection, names.side, entry.table_schema)
    if holder is None:
        return REPLACED
    if backend(connection).folds_names:  # MySQL/MariaDB: column names compare without case
        return "attached" if names.fingerprint.lower() in {c.lower() for c in holder.columns} else REPLACED
    return "attached" if names.fingerprint in holder.columns else REPLACED


def made_by_a_mixin(connection: Connection, facts: TableFacts, names: Names, source: Sequence[str]) -> bool:
    """Whether the objects holding simsql's ``names`` on a table its registry does not record
    are exactly those ``create_all`` of a ``SimHashMixin`` (``WideSimHashMixin`` for wide
    ``names``) model reading ``source`` makes: every column of ``names``, none but the digest text, the
    fingerprint and words ``bigint``, the blocks integers, no wide column beyond ``names``, and
    the trigger as simsql writes it, body included (:meth:`simsql.dialects.Backend.triggers_as_written`).
    What passes is simsql's to adopt; anything else is not (nothing of it is touched)."""
    server = backend(connection)
    if names.side is not None:
        return False

    def fold(name: str) -> str:
        return name.lower() if server.folds_names else name

    columns = {fold(name): column for name, column in facts.columns.items()}
    found = [columns.get(fold(name)) for name in names.added_columns]
    if any(column is None or (column.is_text and name != names.digest) for name, column in zip(names.added_columns, found)):
        return False
    wide_only = [fold(name) for name in names.with_wide(True).added_columns if name not in names.added_columns]
    other_blocks = [fold(name) for name in names.with_wide(True, ALL_BLOCKS).wide_blocks if name not in names.wide_blocks]
    if any(name in columns for name in (*wide_only, *other_blocks)):  # a mixin of other blocks (or none)
        return False
    words = {fold(name) for name in names.signature_words}
    for name, column in zip(names.added_columns, found):
        assert column is not None
        kind = column.type.lower()
        if (fold(name) in words and "bigint" not in kind) or (name in (*names.blocks, *names.wide_blocks) and "int" not in kind):
            return False
    return server.triggers_as_written(connection, facts.schema, names, source, facts.keys)


def stored_fingerprints_agree(
    connection: Connection, facts: TableFacts, names: Names, source: Sequence[str], fingerprinter: Any, sample: int = 16
) -> bool:
    """Whether up to ``sample`` fingerprints stored in ``facts``' table are those ``fingerprinter``
    computes from their rows' text: a table adopted from a mixin model is recorded with the
    configuration its fingerprints were made with, or not at all."""
    server = backend(connection)
    quote = server.quote
    sql = (
        f"SELECT {quote(names.fingerprint)}, {', '.join(quote(c) for c in source)} FROM {server.qualified(facts.schema, facts.name)} "
        f"WHERE {quote(names.fingerprint)} IS NOT NULL LIMIT {int(sample)}"
    )
    for stored, *values in connection.execute(text(sql)):
        text_value = join_text(values)
        if text_value is not None and fingerprinter.fingerprint_many([text_value], empty="none")[0] != server.fingerprint_from_db(stored):
            return False
    return True


def not_attached(schema: str, table: str) -> NotAttached:
    """The refusal of a table simsql's registry does not record, with the command that attaches
    it (a mixin model's table is adopted by it as it is)."""
    command = shlex.join(["simsql", "attach", "--table", table, "--schema", schema])
    return NotAttached(
        f"{schema}.{table} is not attached to simsql; run `{command} --text-column COLUMN` (one --text-column per "
        "column its text comes from; simsql.attach_table)"
    )


def replaced_message(entry: Attachment) -> str:
    """Why a table replaced outside simsql is refused, and the one command that clears what
    simsql recorded of the table it replaced (``simsql detach``, as for a dropped one)."""
    command = shlex.join(["simsql", "detach", "--table", entry.table_name, "--schema", entry.table_schema])
    return (
        f"{entry.table_schema}.{entry.table_name} was replaced outside simsql (dropped and made again): simsql's "
        f"registry still holds the dropped table's entry ({entry.mode}, {entry.config_id}). Nothing was changed; run "
        f"`{command}` (simsql.detach_table) to clear it, then attach the new table"
    )


__all__ = [
    "not_attached",
    "made_by_a_mixin",
    "stored_fingerprints_agree",
    "replaced_message",
    "GONE",
    "REPLACED",
    "attachment_state",
    "Column",
    "IndexState",
    "TableFacts",
    "attachment",
    "dependents",
    "describe",
    "has_rows",
    "index_names",
    "index_state",
    "partition_tree",
    "present",
    "reflect",
    "require_table",
    "schema_triggers",
    "table_facts",
]

