"""PostgreSQL's DDL of partition lists: an instant ``ADD COLUMN`` and a concurrent build of the
covering index (``INCLUDE``: the list, then the signature words and the key), so a probed list
is ranked by an index-only scan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.compiler import compiles

from ...schema.names import CENTRES_TABLE, Names
from ..constructs import InSelected
from ..ddl_plan import DDLPlan, ListsDDL, Present, Step
from .ddl import LISTS_WRITE, qualified, quote


@compiles(InSelected, "postgresql")
def _in_selected(element: InSelected, compiler: Any, **kw: Any) -> str:
    """``= ANY(ARRAY(select))``: the select runs once (an init plan), and the list index is
    scanned once with the array's values as its keys."""
    column = compiler.process(element.column, **kw)
    return f"{column} = ANY(ARRAY({compiler.process(element.selected, asfrom=False, **kw)}))"


class PostgresListsDDL(ListsDDL):
    name = "postgresql"
    concurrent_builds = True
    """Whether the index is built ``CONCURRENTLY`` (outside a transaction)."""

    def add(
        self, schema: str, names: Names, holder_keys: Sequence[str], present: Present, *, concurrently: bool = True,
        empty: bool = False,
    ) -> DDLPlan:  # fmt: skip
        holder = qualified(schema, names.holder)
        steps = []
        if not present.has_column(names.part):
            steps.append(Step(f"ALTER TABLE {holder} ADD COLUMN {quote(names.part)} integer", f"add column {names.part}"))
        if not present.has_index(names.part_index):
            include = ", ".join(quote(c) for c in (*names.part_covered, *holder_keys))
            concurrently = concurrently and self.concurrent_builds
            keyword = "CONCURRENTLY " if concurrently else ""
            steps.append(Step(
                f"CREATE INDEX {keyword}IF NOT EXISTS {quote(names.part_index)} ON {holder} ({quote(names.part)}) "
                f"INCLUDE ({include})",
                f"build index {names.part_index} on {schema}.{names.holder}", concurrently=concurrently,
            ))  # fmt: skip
        return self.plan(steps)

    def refresh(self, schema: str, table: str) -> DDLPlan:
        sql = f"VACUUM (ANALYZE) {qualified(schema, table)}"
        centres = Step(f"ANALYZE {quote(CENTRES_TABLE)}", f"analyze {CENTRES_TABLE}", concurrently=True)
        return self.plan([Step(sql, f"vacuum and analyze {schema}.{table}", concurrently=True), centres])

    def write_lists(self, connection: Any, relation: Any, keys: Sequence[str], fingerprint: str, part: str, rows: Sequence[Sequence[Any]]) -> int:
        """One ``UPDATE ... FROM jsonb_populate_recordset``: the rows arrive as one JSON value
        typed by the table's own row type (any key type, one parameter, one plan). It sets the
        list alone, so simsql's row trigger is told not to hash each row's text again
        (:data:`~simsql.dialects.postgresql.ddl.LISTS_WRITE`, on for this statement only)."""
        holder = qualified(relation.schema, relation.name)
        match = " AND ".join(f"t.{quote(c)} = v.{quote(c)}" for c in (*keys, fingerprint))
        sql = (
            f"UPDATE {holder} AS t SET {quote(part)} = v.{quote(part)} "
            f"FROM jsonb_populate_recordset(NULL::{holder}, CAST(:rows AS jsonb)) AS v WHERE {match}"
        )
        names = (*keys, fingerprint, part)
        payload = json.dumps([dict(zip(names, row)) for row in rows], default=str)
        switch = text("SELECT set_config(:name, :value, true)")
        connection.execute(switch, {"name": LISTS_WRITE, "value": "on"})
        written = int(connection.execute(text(sql), {"rows": payload}).rowcount or 0)
        connection.execute(switch, {"name": LISTS_WRITE, "value": "off"})
        return written

    def tidy(self, schema: str, table: str) -> DDLPlan:
        """``INDEX_CLEANUP OFF``: the vacuum frees the space of the row versions the batches
        replaced (each page pruned, its free space recorded for the next slices), and leaves
        their index entries; a full index cleanup would read every index of the table once per
        slice, and the fit rebuilds the indexes it grew at its end anyway (:meth:`rebuild`),
        before the vacuum of :meth:`refresh` cleans what is left."""
        sql = f"VACUUM (SKIP_LOCKED, INDEX_CLEANUP OFF) {qualified(schema, table)}"
        return self.plan([Step(sql, f"vacuum {schema}.{table} between batches", concurrently=True)])

    def rebuild(self, schema: str, names: Names, indexes: Sequence[str]) -> DDLPlan:
        return self.plan([
            Step(f"REINDEX INDEX CONCURRENTLY {qualified(schema, index)}", f"rebuild index {index} online", concurrently=True)
            for index in indexes
        ])  # fmt: skip

    def index_sizes(self, connection: Any, schema: str, table: str) -> dict[str, int]:
        rows = connection.execute(
            text(
                "SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
                "WHERE n.nspname = :schema AND t.relname = :table AND x.indisvalid"
            ),
            {"schema": schema, "table": table},
        )
        return {str(name): int(size) for name, size in rows}

    def stopped_rebuilds(self, connection: Any, schema: str, table: str) -> DDLPlan:
        """The invalid ``<index>_ccnew`` copies a ``REINDEX ... CONCURRENTLY`` stopped midway
        leaves (they would be written by every insert and read by no query), dropped online."""
        rows = connection.execute(
            text(
                "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
                "WHERE n.nspname = :schema AND t.relname = :table AND NOT x.indisvalid AND i.relname ~ '_ccnew[0-9]*$'"
            ),
            {"schema": schema, "table": table},
        )
        return self.plan([
            Step(f"DROP INDEX CONCURRENTLY IF EXISTS {qualified(schema, name)}", f"drop {name}, left by a stopped rebuild",
                 concurrently=True)
            for (name,) in rows
        ])  # fmt: skip

    def drop(self, schema: str, names: Names, present: Present, *, concurrently: bool = True, column: bool = True) -> DDLPlan:
        steps = []
        if present.has_index(names.part_index):
            concurrently = concurrently and self.concurrent_builds
            keyword = "CONCURRENTLY " if concurrently else ""
            steps.append(Step(
                f"DROP INDEX {keyword}IF EXISTS {qualified(schema, names.part_index)}", f"drop index {names.part_index}",
                concurrently=concurrently,
            ))  # fmt: skip
        if column and present.has_column(names.part):
            steps.append(Step(
                f"ALTER TABLE {qualified(schema, names.holder)} DROP COLUMN IF EXISTS {quote(names.part)}",
                f"drop column {names.part}",
            ))  # fmt: skip
        return self.plan(steps)


POSTGRES_PARTITION_DDL = PostgresListsDDL()
