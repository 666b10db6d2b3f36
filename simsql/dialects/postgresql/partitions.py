"""PostgreSQL's DDL of partition lists: an instant ``ADD COLUMN`` and a concurrent build of the
covering index (``INCLUDE``: the list, then the signature words and the key), so a probed list
is ranked by an index-only scan."""

from __future__ import annotations

from collections.abc import Sequence

from ...schema import Names
from ..plan import PartitionDDL, Plan, Present, Step
from .ddl import qualified, quote


class PostgresPartitionDDL(PartitionDDL):
    name = "postgresql"
    concurrent_builds = True
    """Whether the index is built ``CONCURRENTLY`` (outside a transaction)."""

    def add(self, schema: str, names: Names, holder_keys: Sequence[str], present: Present) -> Plan:
        holder = qualified(schema, names.holder)
        steps = []
        if not present.has_column(names.part):
            steps.append(Step(f"ALTER TABLE {holder} ADD COLUMN {quote(names.part)} integer", f"add column {names.part}"))
        if not present.has_index(names.part_index):
            include = ", ".join(quote(c) for c in (*names.part_covered, *holder_keys))
            keyword = "CONCURRENTLY " if self.concurrent_builds else ""
            steps.append(Step(
                f"CREATE INDEX {keyword}IF NOT EXISTS {quote(names.part_index)} ON {holder} ({quote(names.part)}) "
                f"INCLUDE ({include})",
                f"build index {names.part_index} on {schema}.{names.holder}", concurrently=self.concurrent_builds,
            ))  # fmt: skip
        return self.plan(steps)

    def drop(self, schema: str, names: Names, present: Present, *, concurrently: bool = True) -> Plan:
        steps = []
        if present.has_index(names.part_index):
            concurrently = concurrently and self.concurrent_builds
            keyword = "CONCURRENTLY " if concurrently else ""
            steps.append(Step(
                f"DROP INDEX {keyword}IF EXISTS {qualified(schema, names.part_index)}", f"drop index {names.part_index}",
                concurrently=concurrently,
            ))  # fmt: skip
        if present.has_column(names.part):
            steps.append(Step(
                f"ALTER TABLE {qualified(schema, names.holder)} DROP COLUMN IF EXISTS {quote(names.part)}",
                f"drop column {names.part}",
            ))  # fmt: skip
        return self.plan(steps)


POSTGRES_PARTITION_DDL = PostgresPartitionDDL()
