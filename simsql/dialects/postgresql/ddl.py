"""PostgreSQL's DDL as text: the digest trigger, and the plans that attach, index and detach.

Nothing here touches a database (:class:`PostgresDDL` describes, :mod:`simsql.lifecycle.apply`
runs). Choices made for big, busy tables:

* columns are added nullable and without defaults, which PostgreSQL records in the catalog
  without rewriting the table (``GENERATED ... STORED`` would rewrite it under an exclusive
  lock, so in-place blocks are maintained by the trigger instead);
* indexes can be built ``CONCURRENTLY`` (outside a transaction block, one statement each);
* identifiers are quoted by PostgreSQL's own preparer, values are bound parameters.

The invariant the trigger keeps: a fingerprint is stored with the md5 of the text it was
computed from (``<prefix>_src``); the trigger compares it with the row's text on every write,
whoever the writer (ORM, Core, raw SQL, COPY), and drops a fingerprint whose text is gone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy.dialects import postgresql

from ...schema.names import PROGRESS_TABLE, REGISTRY_TABLE, Names
from ...text.fingerprint import Fingerprinter
from ...text.vectors import AnyFingerprinter
from ..base import Backend
from ..ddl_plan import REGISTRY_INSERT, DDLDescriber, DDLPlan, Partition, Present, Step, TableFacts, TableShape, registry_values
from ..sqltext import sql_identifier
from ..wide_sql import wide_block_sql

_PREPARER = postgresql.dialect().identifier_preparer

FUNCTION_MARK = "-- written by simsql"
"""First line of every trigger function simsql writes: how simsql recognises its own function
once the table it served is gone (``DROP TABLE`` takes the trigger, not the function)."""

ROW_TIMING = "BEFORE INSERT OR UPDATE"
LISTS_WRITE = "simsql.lists_write"
"""A setting a fit turns on, in its own transaction, around the one statement that writes a
batch's partition lists (:meth:`simsql.dialects.postgresql.lists.PostgresListsDDL.write_lists`)
and off after it: the row trigger then returns at once for an update that keeps the fingerprint
and its digest, instead of hashing the row's text to find the digest still right. Not for
writers: one that sets it and changes the text skips the check of that write (``simsql status``
counts such a row stale, as one written with triggers disabled)."""
STALE_TIMING = "AFTER UPDATE"


def quote(name: str) -> str:
    return sql_identifier(_PREPARER, name)


def qualified(schema: str, name: str) -> str:
    return f"{quote(schema)}.{quote(name)}"


def digest_sql(columns: Sequence[str], row: str = "") -> str:
    """SQL for the digest of a row's text; ``row`` qualifies the columns (``NEW.``, ``b.``).
    md5 of the text's UTF-8 bytes, as :func:`simsql.store.storage.text_digest` computes it, whatever
    the database's encoding (``md5(text)`` would hash a LATIN1 database's own bytes)."""
    return f"CAST(md5(convert_to(concat_ws(chr(10), {', '.join(row + quote(c) for c in columns)}), 'UTF8')) AS uuid)"


def row_trigger_body(names: Names, source: Sequence[str], *, derive_blocks: bool, skips_list_writes: bool = True) -> str:
    """Columns mode: BEFORE INSERT OR UPDATE on the user's table.

    A fingerprint is kept only if it comes with the digest of the row's current text
    (:data:`LISTS_WRITE`: a fit's writes of the list alone are not checked again;
    ``skips_list_writes=False`` is the body without that return, as simsql wrote it before, which
    tables made then still hold and which stays simsql's to recognise). One
    written without a digest (a raw loader) is kept until the text changes. A digest without a
    fingerprint marks text without words (a backfill found none): kept while the text stays. ``derive_blocks``:
    blocks are plain columns (tables altered in place) rather than generated ones.
    """
    fp, src = f"NEW.{quote(names.fingerprint)}", f"NEW.{quote(names.digest)}"
    old_fp, old_src = f"OLD.{quote(names.fingerprint)}", f"OLD.{quote(names.digest)}"
    changed = " OR ".join(f"NEW.{quote(c)} IS DISTINCT FROM OLD.{quote(c)}" for c in source)
    blocks = "".join(
        f"\n  NEW.{quote(name)} := {Backend.block_expression_sql(fp, i)};" for i, name in enumerate(names.blocks)
    ) if derive_blocks else ""
    words = "".join(f"\n    NEW.{quote(word)} := NULL;" for word in names.wide_words)
    if words:  # the wide signature goes with its word 0, the fingerprint
        blocks = f"\n  IF {fp} IS NULL THEN{words}\n  END IF;{blocks}"
    if derive_blocks:  # an attached table's wide blocks are plain columns too
        signature = [f"NEW.{quote(word)}" for word in names.signature_words]
        blocks += "".join(
            f"\n  NEW.{quote(name)} := {wide_block_sql(signature, i, cast=True, layout=names.layout)};"
            for i, name in enumerate(names.wide_blocks)
        )
    skip = f"""
  IF TG_OP = 'UPDATE' AND current_setting('{LISTS_WRITE}', true) = 'on' AND {fp} IS NOT DISTINCT FROM {old_fp}
      AND {src} IS NOT DISTINCT FROM {old_src} THEN
    RETURN NEW;  -- a fit writing partition lists: nothing this checks was set
  END IF;""" if skips_list_writes else ""
    return f"""
BEGIN{skip}
  IF {fp} IS NOT NULL THEN
    IF TG_OP = 'UPDATE' AND {fp} IS DISTINCT FROM {old_fp} AND {src} IS NOT DISTINCT FROM {old_src} THEN
      {src} := NULL;  -- a new fingerprint written without the digest of its text
    END IF;
    IF {src} IS NOT NULL THEN
      IF {src} <> {digest_sql(source, "NEW.")} THEN
        {fp} := NULL;  -- computed from text this row no longer holds
      END IF;
    ELSIF TG_OP = 'UPDATE' AND ({changed}) THEN
      {fp} := NULL;
    END IF;
  END IF;
  IF {fp} IS NULL AND {src} IS NOT NULL THEN
    IF {src} <> {digest_sql(source, "NEW.")} THEN
      {src} := NULL;  -- kept only as the mark of text without words, while the text stays
    END IF;
  END IF;{blocks}
  RETURN NEW;
END
"""


def stale_trigger_body(schema: str, names: Names, keys: Sequence[str], source: Sequence[str]) -> str:
    """Side-table mode: AFTER UPDATE on the user's table; deletes the side row of a row whose
    text changed, unless it already holds the new text's fingerprint."""
    assert names.side is not None
    side = qualified(schema, names.side)
    condition = " AND ".join(f"{quote(s)} = OLD.{quote(k)}" for s, k in zip(names.side_keys(keys), keys))
    changed = " OR ".join(f"NEW.{quote(c)} IS DISTINCT FROM OLD.{quote(c)}" for c in source)
    return f"""
BEGIN
  IF {changed} THEN
    DELETE FROM {side} WHERE {condition}
      AND {quote(names.digest)} IS DISTINCT FROM {digest_sql(source, "NEW.")};
  END IF;
  RETURN NULL;
END
"""


def dollar_quote(body: str) -> str:
    """Dollar-quote a function body with a tag that cannot occur in it."""
    tag, n = "$simsql$", 0
    while tag in body:
        n += 1
        tag = f"$simsql{n}$"
    return f"{tag}{body}{tag}"


def trigger_sql(schema: str, function: str, timing: str, table: str, body: str) -> tuple[str, str]:
    """CREATE FUNCTION and CREATE TRIGGER (named like the function) for one row trigger."""
    qualified_function = qualified(schema, function)
    marked = f"\n{FUNCTION_MARK}{body}"  # no names in the comment: a newline in one would end it
    return (
        f"CREATE FUNCTION {qualified_function}() RETURNS trigger LANGUAGE plpgsql AS {dollar_quote(marked)}",
        f"CREATE TRIGGER {quote(function)} {timing} ON {qualified(schema, table)} "
        f"FOR EACH ROW EXECUTE FUNCTION {qualified_function}()",
    )


def trigger_function(names: Names) -> str:
    """The attachment's trigger, and the function it executes (both carry this name)."""
    return names.row_function if names.side is None else names.stale_function


def create_trigger_sql(
    schema: str, names: Names, source: Sequence[str], keys: Sequence[str], *, derive_blocks: bool = False,
    skips_list_writes: bool = True,
) -> tuple[str, str]:
    """CREATE FUNCTION and CREATE TRIGGER of the row rule (columns mode) or the stale-row rule
    (side-table mode) on ``names.table`` (``skips_list_writes``: see :func:`row_trigger_body`)."""
    if names.side is None:
        body = row_trigger_body(names, source, derive_blocks=derive_blocks, skips_list_writes=skips_list_writes)
        return trigger_sql(schema, names.row_function, ROW_TIMING, names.table, body)
    return trigger_sql(schema, names.stale_function, STALE_TIMING, names.table, stale_trigger_body(schema, names, keys, source))


def drop_trigger_sql(schema: str, table: str, function: str, *, table_dropped: bool = False) -> tuple[str, ...]:
    """The trigger ``function`` on ``table`` (unless the table is gone already) and its function."""
    drop_function = f"DROP FUNCTION IF EXISTS {qualified(schema, function)}()"
    if table_dropped:
        return (drop_function,)
    return f"DROP TRIGGER IF EXISTS {quote(function)} ON {qualified(schema, table)}", drop_function


class PostgresDDL(DDLDescriber):
    """PostgreSQL >= 14: one transaction per plan, ``CONCURRENTLY`` index builds outside it."""

    name = "postgresql"

    def _trigger(self, target: TableShape, names: Names, what: str) -> list[Step]:
        function = trigger_function(names)
        create_function, create_trigger = create_trigger_sql(
            target.schema, names, target.source, target.keys, derive_blocks=True
        )
        return [
            Step(create_function, f"create function {target.schema}.{function}"),
            Step(create_trigger, f"create trigger {function} ({what})"),
        ]

    def add_columns(self, target: TableShape, names: Names) -> DDLPlan:
        """Columns mode: fingerprint, digest and block columns on the user's table, and the row
        trigger that derives blocks and never keeps a fingerprint of text the row no longer holds."""
        additions = [f"ADD COLUMN {quote(names.fingerprint)} bigint", f"ADD COLUMN {quote(names.digest)} uuid"]
        additions += [f"ADD COLUMN {quote(name)} integer" for name in names.blocks]
        additions += [f"ADD COLUMN {quote(name)} bigint" for name in names.wide_words]
        additions += [f"ADD COLUMN {quote(name)} integer" for name in names.wide_blocks]
        base = qualified(target.schema, target.table)
        steps = [Step(f"ALTER TABLE {base} " + ", ".join(additions), f"add columns to {target.schema}.{target.table}")]
        return self.plan(steps + self._trigger(target, names, "derives blocks, drops stale fingerprints"))

    def create_side_table(self, target: TableShape, names: Names) -> DDLPlan:
        """Side-table mode: the user's table is not altered; a side table keyed like it, and a
        trigger on the user's table that deletes side rows whose text changed."""
        assert names.side is not None
        side_keys = names.side_keys(target.keys)
        own_keys = ", ".join(quote(k) for k in side_keys)
        key_columns = ", ".join(f"{quote(k)} {t} NOT NULL" for k, t in zip(side_keys, target.key_types))
        fingerprint = quote(names.fingerprint)
        blocks = [
            f"{quote(name)} integer GENERATED ALWAYS AS ({Backend.block_expression_sql(fingerprint, i)}) STORED"
            for i, name in enumerate(names.blocks)
        ]
        blocks += [f"{quote(name)} bigint" for name in names.wide_words]
        signature = [quote(word) for word in names.signature_words]
        blocks += [
            f"{quote(name)} integer GENERATED ALWAYS AS ({wide_block_sql(signature, i, cast=True, layout=names.layout)}) STORED"
            for i, name in enumerate(names.wide_blocks)
        ]
        create = (
            f"CREATE TABLE {qualified(target.schema, names.side)} ({key_columns}, {fingerprint} bigint, "
            f"{quote(names.digest)} uuid, {', '.join(blocks)}, PRIMARY KEY ({own_keys}), FOREIGN KEY ({own_keys}) "
            f"REFERENCES {qualified(target.schema, target.table)} ({', '.join(quote(k) for k in target.keys)}) ON DELETE CASCADE)"
        )
        steps = [Step(create, f"create side table {target.schema}.{names.side}")]
        return self.plan(steps + self._trigger(target, names, "drops stale side rows"))

    def record(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> DDLPlan:
        """The registry entry (simsql's revision must be applied)."""
        sql = REGISTRY_INSERT.format(settings="CAST(:settings AS jsonb)", source="CAST(:source AS text[])")
        params = registry_values(target, names, fingerprinter)
        return self.plan([Step(sql, f"record {target.schema}.{target.table} in {REGISTRY_TABLE}", params)])

    def attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> DDLPlan:
        """Everything but the indexes, in one transaction."""
        holder = self.create_side_table(target, names) if names.side else self.add_columns(target, names)
        return holder + self.record(target, names, fingerprinter)

    def resume_attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter, present: Present) -> DDLPlan:
        """An attachment made by simsql 0.1 (no digest column) is upgraded; otherwise nothing."""
        if present.holder and not present.has_column(names.digest):
            return self.upgrade(target, names)
        return DDLPlan()

    def create_indexes(
        self, schema: str, names: Names, holder_keys: Sequence[str], *, concurrently: bool = False,
        present: Present = Present(),
    ) -> DDLPlan:  # fmt: skip
        """A partitioned holder built concurrently gets one build per partition; otherwise
        :meth:`build_indexes`, rebuilding what a failed concurrent build left invalid."""
        if concurrently and present.partitions:
            return self.create_partitioned_indexes(schema, names, holder_keys, present.partitions)
        return self.build_indexes(schema, names, holder_keys, concurrently=concurrently, invalid=present.invalid)

    def build_indexes(
        self, schema: str, names: Names, holder_keys: Sequence[str], *, concurrently: bool = False, invalid: Sequence[str] = ()
    ) -> DDLPlan:
        """Covering btree indexes on the four blocks (``INCLUDE`` fingerprint and key), so that
        candidate lookups are index-only scans. ``invalid`` names indexes a failed concurrent
        build left behind (the catalog knows which): they are dropped and rebuilt."""
        keyword = "CONCURRENTLY " if concurrently else ""
        holder = qualified(schema, names.holder)
        steps = []
        for name, block in zip(names.indexes, names.indexed_blocks):
            if name in invalid:
                drop = f"DROP INDEX {keyword}IF EXISTS {qualified(schema, name)}"
                steps.append(Step(drop, f"drop invalid index {name}", concurrently=concurrently))
            include = ", ".join(quote(c) for c in (*names.covered(block), *holder_keys))
            steps.append(Step(
                f"CREATE INDEX {keyword}IF NOT EXISTS {quote(name)} ON {holder} ({quote(block)}) INCLUDE ({include})",
                f"build index {name} on {schema}.{names.holder}", concurrently=concurrently,
            ))  # fmt: skip
        return self.plan(steps)

    def create_partitioned_indexes(
        self, schema: str, names: Names, holder_keys: Sequence[str], tree: Sequence[Partition]
    ) -> DDLPlan:
        """Concurrent builds for a partitioned holder (``CREATE INDEX CONCURRENTLY`` cannot run on
        one): an index ``ON ONLY`` each partitioned table (catalog entries, no scan), one
        concurrent build per leaf partition, then each child index attached to its parent's.
        Once every partition's index is attached, the parent's becomes valid. ``tree``: (relation,
        parent, is_leaf) from ``pg_partition_tree``, parents first."""
        on_only, builds, attaches = [], [], []
        for relation, parent, is_leaf in tree:
            for block in names.indexed_blocks:
                index = names.index_on(relation, block)
                include = ", ".join(quote(c) for c in (*names.covered(block), *holder_keys))
                target = f"{qualified(schema, relation)} ({quote(block)}) INCLUDE ({include})"
                if is_leaf:
                    sql = f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {quote(index)} ON {target}"
                    builds.append(Step(sql, f"build index {index} on partition {schema}.{relation}", concurrently=True))
                else:
                    sql = f"CREATE INDEX IF NOT EXISTS {quote(index)} ON ONLY {target}"
                    on_only.append(Step(sql, f"declare index {index} on partitioned {schema}.{relation}"))
                if parent is not None:
                    sql = f"ALTER INDEX {qualified(schema, names.index_on(parent, block))} ATTACH PARTITION {qualified(schema, index)}"
                    attaches.append(Step(sql, f"attach index {index} to {names.index_on(parent, block)}", concurrently=True))
        return self.plan(on_only + builds + list(reversed(attaches)))

    def drop_indexes(self, schema: str, names: Names, *, concurrently: bool = False, present: Present | None = None) -> DDLPlan:
        keyword = "CONCURRENTLY " if concurrently else ""
        return self.plan(
            Step(f"DROP INDEX {keyword}IF EXISTS {qualified(schema, name)}", f"drop index {name}", concurrently=concurrently)
            for name in names.indexes
        )

    def detach(self, table: TableFacts, names: Names, source: Sequence[str], present: Present) -> DDLPlan:
        # A table replaced outside simsql lost its triggers with the old table; their functions stay.
        gone = [f for f in names.functions if f not in table.triggers]
        return self.plan(_drop_functions(table.schema, gone)) + self.drop_attachment(
            table.schema, names, triggers=table.triggers, columns=list(table.columns)
        )

    def drop_leftovers(self, schema: str, side_tables: Sequence[str], names: Names) -> DDLPlan:
        steps = [Step(f"DROP TABLE {qualified(schema, side)}", f"drop side table {schema}.{side}") for side in side_tables]
        return self.plan(steps + _drop_functions(schema, [*names.functions, *names.shadow().functions]))

    def drop_attachment(
        self, schema: str, names: Names, *, triggers: Sequence[str] = (), columns: Sequence[str] | None = None
    ) -> DDLPlan:
        """Remove what :meth:`attach` created (indexes go with their columns or side table).

        ``triggers`` and ``columns`` are what the catalog found on the user's table; only simsql's
        own are dropped (a table attached by an older simsql has no digest column).
        """
        base = qualified(schema, names.table)
        steps: list[Step] = []
        for function in names.functions:
            if function in triggers:
                steps.append(Step(f"DROP TRIGGER {quote(function)} ON {base}", f"drop trigger {function}"))
                steps.append(Step(f"DROP FUNCTION {qualified(schema, function)}()", f"drop function {function}"))
        if names.side:
            steps.append(Step(f"DROP TABLE {qualified(schema, names.side)}", f"drop side table {schema}.{names.side}"))
        else:
            kept = [c for c in reversed(names.added_columns) if columns is None or c in columns]
            if kept:  # none on a table replaced outside simsql
                drops = ", ".join(f"DROP COLUMN {quote(c)}" for c in kept)
                steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop columns from {schema}.{names.table}"))
        return self.plan(steps) + self.forget(schema, names.table)

    # -- a way forward: upgrade a 0.1 attachment, refingerprint to another configuration ------

    def _drop_trigger(self, target: TableShape, names: Names) -> list[Step]:
        function = trigger_function(names)
        drop_trigger, drop_function = drop_trigger_sql(target.schema, target.table, function)
        return [Step(drop_trigger, f"drop trigger {function}"), Step(drop_function, f"drop function {function}")]

    def upgrade(self, target: TableShape, names: Names) -> DDLPlan:
        """An attachment made by simsql 0.1 (no digest column, a trigger that kept fingerprints a
        writer recomputed from stale text) gets the digest column and today's trigger. Its
        fingerprints are kept with an unknown (NULL) digest, which marks them for verification:
        backfill fingerprints them again and stores the digest."""
        holder = qualified(target.schema, names.holder)
        steps = [Step(f"ALTER TABLE {holder} ADD COLUMN {quote(names.digest)} uuid", f"add column {names.digest}")]
        what = "drops stale side rows" if names.side else "derives blocks, drops stale fingerprints"
        return self.plan(steps + self._drop_trigger(target, names) + self._trigger(target, names, what))

    def stage(self, target: TableShape, shadow: Names, fingerprinter: Fingerprinter, cursor: str) -> DDLPlan:
        """The shadow fingerprint set of a refingerprint (columns or side table, with the trigger
        that keeps its digest invariant) and its resume cursor, in one transaction: the cursor's
        row proves the shadow objects are simsql's own."""
        holder = self.create_side_table(target, shadow) if shadow.side else self.add_columns(target, shadow)
        sql = (
            f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase) "
            "VALUES (:schema, :cursor, :config_id, 'scan')"
        )
        params = {"schema": target.schema, "cursor": cursor, "config_id": fingerprinter.config_id}
        return holder + self.plan([Step(sql, f"record refingerprint of {target.schema}.{target.table}", params)])

    def unstage(self, target: TableShape, shadow: Names, cursor: str) -> DDLPlan:
        """Remove a shadow set (an abandoned refingerprint); the attachment is untouched."""
        base = qualified(target.schema, target.table)
        steps = self._drop_trigger(target, shadow)
        if shadow.side:
            steps.append(Step(f"DROP TABLE IF EXISTS {qualified(target.schema, shadow.side)}", f"drop {shadow.side}"))
        else:
            drops = ", ".join(f"DROP COLUMN IF EXISTS {quote(c)}" for c in shadow.added_columns)
            steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop shadow columns of {target.table}"))
        params = {"schema": target.schema, "cursor": cursor}
        where = "WHERE table_schema = :schema AND table_name = :cursor"
        steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} {where}", "forget the refingerprint cursor", params))
        return self.plan(steps)

    def switch(
        self, target: TableShape, names: Names, shadow: Names, fingerprinter: Fingerprinter, cursor: str,
        side_keys: tuple[str, str] | None = None, partitions: Sequence[str] = (),
    ) -> DDLPlan:  # fmt: skip
        """Replace the attachment's fingerprints by the shadow set, in one transaction: old
        trigger and fingerprints dropped, shadow columns (or side table) and indexes renamed to
        the attachment's own names, today's trigger under its usual name, the registry entry
        moved to the new configuration, cursors forgotten. ``side_keys``: (shadow side table's
        primary key constraint, the old one's name) and ``partitions`` (of a partitioned table:
        their block indexes are renamed too) so the names stay free for the next run."""
        # a move to (or from) version 3 adds (or drops) the wide signature; its blocks as the shadow's
        after = names.with_wide(shadow.wide, shadow.layout)
        steps = self._drop_trigger(target, names) + self._drop_trigger(target, shadow)
        steps += self._rename_shadow(target, names, shadow, after, side_keys, partitions)
        what = "drops stale side rows" if names.side else "derives blocks, drops stale fingerprints"
        steps += self._trigger(target, after, what)  # shadow blocks are plain columns: derived
        where = "WHERE table_schema = :schema AND table_name = :table"
        params = {"schema": target.schema, "table": target.table, "config_id": fingerprinter.config_id,
                  "settings": json.dumps(fingerprinter.settings, sort_keys=True), "cursor": cursor,
                  "mode": after.recorded_mode}  # fmt: skip
        steps.append(Step(f"UPDATE {REGISTRY_TABLE} SET config_id = :config_id, settings = CAST(:settings AS jsonb), "
                          f"mode = :mode, updated_at = now() {where}", f"record {fingerprinter.config_id} for {target.table}", params))  # fmt: skip
        steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name IN (:table, :cursor)",
                          "forget backfill cursors", params))  # fmt: skip
        return self.plan(steps)

    def _rename_shadow(
        self, target: TableShape, names: Names, shadow: Names, after: Names, side_keys: tuple[str, str] | None,
        partitions: Sequence[str],
    ) -> list[Step]:  # fmt: skip
        """The old fingerprints (``names``) dropped, the shadow set renamed to ``after`` (the
        attachment's names, with the shadow's wide signature or without)."""
        base = qualified(target.schema, target.table)
        steps: list[Step] = []
        if names.side and shadow.side:
            steps.append(Step(f"DROP TABLE {qualified(target.schema, names.side)}", f"drop old side table {names.side}"))
            steps.append(Step(f"ALTER TABLE {qualified(target.schema, shadow.side)} RENAME TO {quote(names.side)}", f"rename {shadow.side}"))
            holder = qualified(target.schema, names.side)
            if side_keys is not None and side_keys[0] != side_keys[1]:
                steps.append(Step(f"ALTER TABLE {holder} RENAME CONSTRAINT {quote(side_keys[0])} TO {quote(side_keys[1])}", "rename primary key"))
        else:
            # blocks first: on a mixin's table they are generated from the fingerprint column
            drops = ", ".join(f"DROP COLUMN {quote(c)}" for c in reversed(names.added_columns))
            steps.append(Step(f"ALTER TABLE {base} {drops}", f"drop old fingerprints of {target.table}"))
            holder = base
        for new, old in zip(shadow.added_columns, after.added_columns):
            steps.append(Step(f"ALTER TABLE {holder} RENAME COLUMN {quote(new)} TO {quote(old)}", f"rename column {new}"))
        renames = list(zip(shadow.indexes, after.indexes))  # on the shadow side table, or the table itself
        for relation in partitions:
            renames += [(after.index_on(relation, new), after.index_on(relation, old))
                        for new, old in zip(shadow.indexed_blocks, after.indexed_blocks)]  # fmt: skip
        for new, old in renames:
            steps.append(Step(f"ALTER INDEX IF EXISTS {qualified(target.schema, new)} RENAME TO {quote(old)}", f"rename index {new}"))
        return steps


POSTGRES_DDL = PostgresDDL()

__all__ = [
    "FUNCTION_MARK",
    "POSTGRES_DDL",
    "PostgresDDL",
    "create_trigger_sql",
    "digest_sql",
    "dollar_quote",
    "drop_trigger_sql",
    "quote",
    "row_trigger_body",
    "stale_trigger_body",
    "trigger_function",
    "trigger_sql",
]


def _drop_functions(schema: str, functions: Sequence[str]) -> list[Step]:
    """Trigger functions whose trigger went with its table (``IF EXISTS``: a table dropped
    before its attachment was whole has fewer)."""
    return [
        Step(f"DROP FUNCTION IF EXISTS {qualified(schema, f)}()", f"drop function {f} (its trigger went with the table)")
        for f in functions
    ]
