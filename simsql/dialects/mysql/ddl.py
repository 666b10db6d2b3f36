"""MySQL's and MariaDB's DDL as text: the digest triggers, and the plans that attach, index and
detach.

The objects are exactly those the ORM creates for a ``SimHashMixin`` table or the side table of
:func:`simsql.attach_model` (same column types, generated expressions, covering indexes and
triggers, from the same functions), so a table attached live and one declared in Python are
the same. Nothing here touches a database. Choices made for big, busy tables, where MySQL DDL
is neither transactional nor, by default, online:

* every change names its algorithm: columns are added and dropped ``ALGORITHM=INSTANT``
  (a metadata change, no rows touched), falling back to ``ALGORITHM=INPLACE, LOCK=NONE`` (an
  online rebuild that lets writers in) where the server cannot do it instantly; indexes are
  built and dropped ``INPLACE, LOCK=NONE``. A change the server could only make by copying the
  table or locking out writers is refused (:class:`~simsql.text.errors.WouldLockTable`), never made;
* stored and generated columns are added by separate statements (MariaDB adds ``VIRTUAL``
  columns instantly, but not together with other changes);
* each statement carries its undo, so a plan that stops halfway (a lock timeout, a refused
  algorithm) is taken back statement by statement and leaves the table as it found it;
* the registry row is written first: should the undo itself be blocked, what stays behind is
  recorded as simsql's, so running attach again finishes it and detach removes it.

The triggers: MySQL has no trigger functions and no "INSERT OR UPDATE" trigger, so the row rule
of PostgreSQL's trigger is written twice (before insert, before update).
``MD5(CONCAT_WS(CHAR(10), ...))`` is the digest of ``storage.join_text`` (NULLs skipped), 32 hex
digits: the form in which SQLAlchemy's ``Uuid`` stores a UUID where there is no native type.
Each column is converted to utf8mb4 first: MD5 hashes a string's bytes in its own character
set, and Python hashes UTF-8, so a latin1 column's accented text would never match its digest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...schema.names import BLOCK_COUNT, PROGRESS_TABLE, REGISTRY_TABLE, Names
from ...text.fingerprint import Fingerprinter
from ...text.vectors import AnyFingerprinter
from ..base import BLOCK_BITS, BLOCK_MASK
from ..ddl_plan import REGISTRY_INSERT, DDLDescriber, DDLPlan, Present, Step, TableFacts, TableShape, registry_values
from ..wide_sql import wide_block_sql

FINGERPRINT_TYPE = "BIGINT UNSIGNED"
""":class:`simsql.SimHash` on MySQL: the 64 bits as they are."""
DIGEST_TYPE = "CHAR(32)"
"""``simsql.store.types.TEXT_DIGEST`` on MySQL: ``MD5()``'s 32 hex digits."""
BLOCK_TYPE = "INT"
INSTANT = "ALGORITHM=INSTANT"
ONLINE = "ALGORITHM=INPLACE, LOCK=NONE"


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(schema: str, name: str) -> str:
    return f"{quote(schema)}.{quote(name)}"


def block_expression_sql(fingerprint_sql: str, index: int) -> str:
    """Block ``index`` of a quoted ``BIGINT UNSIGNED`` column (no CAST: the bits are unsigned)."""
    return f"({fingerprint_sql} >> {BLOCK_BITS * (BLOCK_COUNT - 1 - index)}) & {BLOCK_MASK}"


def digest_sql(columns: Sequence[str], row: str) -> str:
    """The digest of a row's source: text as its UTF-8 bytes, a binary string (a float32 BLOB
    vector) as its own bytes. Read as UTF-8, the bytes that are not UTF-8 all became ``?``, so
    an edit of only such bytes kept the old vector's signature. Both branches are binary, so no
    collation is aggregated and a text digest is the same bytes as before."""
    return f"MD5(CONCAT_WS(CHAR(10), {', '.join(_digest_part(f'{row}{quote(c)}') for c in columns)}))"


def _digest_part(column_sql: str) -> str:
    return f"IF(CHARSET({column_sql}) = 'binary', {column_sql}, CAST(CONVERT({column_sql} USING utf8mb4) AS BINARY))"


def _unchanged(source: Sequence[str]) -> str:
    return " AND ".join(f"NEW.{quote(c)} <=> OLD.{quote(c)}" for c in source)


def _on(schema: str | None, name: str) -> str:
    """A trigger or table name, in ``schema`` when given (a trigger lives in its table's schema,
    and its body resolves unqualified names there)."""
    return quote(name) if schema is None else f"{quote(schema)}.{quote(name)}"


def row_trigger_sql(
    table: str, fingerprint: str, digest: str, source: Sequence[str], update: bool, name: str, schema: str | None = None,
) -> str:  # fmt: skip
    """Columns mode: a fingerprint is kept only with the digest of the row's current text; a
    digest without a fingerprint (text without words, found so by a backfill) only while the
    text stays."""
    fp, src = f"NEW.{quote(fingerprint)}", f"NEW.{quote(digest)}"
    if update:
        rewritten = (
            f"    IF NOT ({fp} <=> OLD.{quote(fingerprint)}) AND {src} <=> OLD.{quote(digest)} THEN SET {src} = NULL; END IF;\n"
        )
        no_digest = f"    ELSEIF NOT ({_unchanged(source)}) THEN SET {fp} = NULL;\n"
    else:
        rewritten, no_digest = "", ""
    return (
        f"CREATE TRIGGER {_on(schema, name)} BEFORE {'UPDATE' if update else 'INSERT'} ON {_on(schema, table)} FOR EACH ROW\n"
        f"BEGIN\n"
        f"  IF {fp} IS NOT NULL THEN\n"
        f"{rewritten}"
        f"    IF {src} IS NOT NULL THEN\n"
        f"      IF {src} <> {digest_sql(source, 'NEW.')} THEN SET {fp} = NULL; END IF;\n"
        f"{no_digest}"
        f"    END IF;\n"
        f"  END IF;\n"
        f"  IF {fp} IS NULL AND {src} IS NOT NULL THEN\n"
        f"    IF {src} <> {digest_sql(source, 'NEW.')} THEN SET {src} = NULL; END IF;\n"
        f"  END IF;\n"
        f"END"
    )


def _clear_words(words: Sequence[str]) -> str:
    return f"SET {', '.join(f'NEW.{quote(w)} = NULL' for w in words)}"


def words_trigger_sql(names: Names, update: bool, schema: str | None = None) -> str:
    """A wide table in columns mode: the signature's words 1-3 go with their word 0, the
    fingerprint: cleared when the row rule (which this trigger follows) left none. Apart from
    the row rule so that a refingerprint adds it to a version 2 table without replacing that
    rule (MySQL/MariaDB cannot replace a trigger atomically)."""
    name, follows = names.words_triggers[update], names.row_triggers[update]
    return (
        f"CREATE TRIGGER {_on(schema, name)} BEFORE {'UPDATE' if update else 'INSERT'} ON {_on(schema, names.table)} "
        f"FOR EACH ROW FOLLOWS {quote(follows)}\n"
        f"BEGIN\n  IF NEW.{quote(names.fingerprint)} IS NULL THEN {_clear_words(names.wide_words)}; END IF;\nEND"
    )


def widen_trigger_sql(names: Names, schema: str | None = None) -> str:
    """While a refingerprint adds the wide signature to a version 2 table in place: a writer of
    the old configuration writes a new fingerprint (or digest) without words 1-3, so words it
    left unchanged beside them describe the old text: cleared, for the fill to write them.
    Only the fill writes words during the move, and it always changes them (from NULL)."""
    fp, src = quote(names.fingerprint), quote(names.digest)
    unchanged = " AND ".join(f"NEW.{quote(w)} <=> OLD.{quote(w)}" for w in names.wide_words)
    return (
        f"CREATE TRIGGER {_on(schema, names.widen_trigger)} BEFORE UPDATE ON {_on(schema, names.table)} "
        f"FOR EACH ROW FOLLOWS {quote(names.words_triggers[1])}\n"
        f"BEGIN\n  IF NOT (NEW.{fp} <=> OLD.{fp} AND NEW.{src} <=> OLD.{src}) AND {unchanged} THEN "
        f"{_clear_words(names.wide_words)}; END IF;\nEND"
    )


def stale_trigger_sql(
    table: str, side: str, digest: str, keys: Sequence[str], side_keys: Sequence[str], source: Sequence[str], name: str,
    schema: str | None = None,
) -> str:  # fmt: skip
    """Side-table mode: a row whose text changed loses its side row, unless that row already
    holds the new text's fingerprint."""
    condition = " AND ".join(f"{quote(s)} = OLD.{quote(k)}" for s, k in zip(side_keys, keys))
    return (
        f"CREATE TRIGGER {_on(schema, name)} AFTER UPDATE ON {_on(schema, table)} FOR EACH ROW\n"
        f"BEGIN\n"
        f"  IF NOT ({_unchanged(source)}) THEN\n"
        f"    DELETE FROM {quote(side)} WHERE {condition} AND NOT ({quote(digest)} <=> {digest_sql(source, 'NEW.')});\n"
        f"  END IF;\n"
        f"END"
    )


def trigger_names(names: Names) -> tuple[str, ...]:
    """The row rule is two triggers (before insert, before update; no trigger here fires on
    both, and triggers need no function), followed on a wide table by the two that clear its
    words with the fingerprint; the stale-row rule is one."""
    if names.side is None:
        return names.row_triggers + (names.words_triggers if names.wide else ())
    return (names.stale_function,)


def create_trigger_sql(schema: str | None, names: Names, source: Sequence[str], keys: Sequence[str]) -> tuple[str, ...]:
    """CREATE TRIGGER statements of the attachment (in ``schema``, else the current database),
    in :func:`trigger_names` order."""
    if names.side is None:
        insert, update = names.row_triggers
        fields = (names.table, names.fingerprint, names.digest, source)
        rows = row_trigger_sql(*fields, False, insert, schema), row_trigger_sql(*fields, True, update, schema)
        return rows + ((words_trigger_sql(names, False, schema), words_trigger_sql(names, True, schema)) if names.wide else ())
    side_keys = names.side_keys(keys)
    return (stale_trigger_sql(names.table, names.side, names.digest, keys, side_keys, source, names.stale_function, schema),)


def drop_trigger_sql(schema: str | None, names: Names) -> tuple[str, ...]:
    where = "" if schema is None else f"{quote(schema)}."
    return tuple(f"DROP TRIGGER IF EXISTS {where}{quote(name)}" for name in trigger_names(names))


def _alter(schema: str, table: str, changes: Sequence[str], algorithm: str) -> str:
    return f"ALTER TABLE {qualified(schema, table)} {', '.join(changes)}, {algorithm}"


def _stored(names: Names) -> list[tuple[str, str]]:
    """(stored column, its definition): fingerprint, digest and a wide table's words 1-3."""
    words = [(name, f"{quote(name)} {FINGERPRINT_TYPE} NULL") for name in names.wide_words]
    return [(names.fingerprint, f"{quote(names.fingerprint)} {FINGERPRINT_TYPE} NULL"),
            (names.digest, f"{quote(names.digest)} {DIGEST_TYPE} NULL"), *words]  # fmt: skip


def _blocks(names: Names) -> list[tuple[str, str]]:
    """(block column, its definition): generated from the fingerprint (a wide block from the
    four words), VIRTUAL as the ORM's."""
    fingerprint = quote(names.fingerprint)
    signature, layout = [quote(word) for word in names.signature_words], names.layout
    return [
        (name, f"{quote(name)} {BLOCK_TYPE} GENERATED ALWAYS AS ({block_expression_sql(fingerprint, i)}) VIRTUAL")
        for i, name in enumerate(names.blocks)
    ] + [
        (name, f"{quote(name)} {BLOCK_TYPE} GENERATED ALWAYS AS {wide_block_sql(signature, i, cast=False, layout=layout)} VIRTUAL")
        for i, name in enumerate(names.wide_blocks)
    ]


def _drop_trigger(schema: str, name: str) -> str:
    return f"DROP TRIGGER {qualified(schema, name)}"


def _index_columns(names: Names, block: str) -> str:
    """The block, then the fingerprint (a wide block: the four words): what ``dialects.mysql``'s
    CREATE INDEX gives the ORM's block indexes (InnoDB appends the primary key to every
    secondary index by itself)."""
    return ", ".join(quote(column) for column in (block, *names.covered(block)))


class MySQLDDL(DDLDescriber):
    """MySQL >= 8.0 and MariaDB >= 10.6: each statement committed at once, with its undo."""

    name = "mysql"

    def _column_steps(
        self, schema: str, table: str, names: Names, present: Present, *, adding: bool, only: Sequence[str] | None = None
    ) -> list[Step]:  # fmt: skip
        """Adding: stored columns, then the generated ones; dropping: the reverse (``only``: of
        these columns). Each statement instant where the server can, else online; its undo is
        the opposite statement."""
        groups = [("stored", _stored(names)), ("generated", _blocks(names))]
        steps = []
        for kind, columns in groups if adding else reversed(groups):
            wanted = [(n, d) for n, d in columns if present.has_column(n) != adding and (only is None or n in only)]
            if not wanted:
                continue
            add = [f"ADD COLUMN {definition}" for _, definition in wanted]
            drop = [f"DROP COLUMN {quote(name)}" for name, _ in reversed(wanted)]
            forward, backward = (add, drop) if adding else (drop, add)
            what = f"{'add' if adding else 'drop'} {kind} columns {', '.join(n for n, _ in wanted)} {'to' if adding else 'from'} {schema}.{table}"
            steps.append(Step(
                _alter(schema, table, forward, INSTANT), what,
                undo=_alter(schema, table, backward, INSTANT), fallback=_alter(schema, table, forward, ONLINE), online=True,
            ))  # fmt: skip
        return steps

    def triggers(self, target: TableShape, names: Names) -> list[tuple[str, str]]:
        """(name, CREATE TRIGGER) of the attachment: the row rule before insert and before update
        (columns mode), or the stale-row rule after update (side-table mode); the same ones
        ``create_all`` installs for the ORM."""
        return list(zip(trigger_names(names), create_trigger_sql(target.schema, names, target.source, target.keys)))

    def _create_triggers(self, target: TableShape, names: Names, present: Present) -> list[Step]:
        return [
            Step(sql, f"create trigger {name} on {target.schema}.{target.table}", undo=_drop_trigger(target.schema, name))
            for name, sql in self.triggers(target, names)
            if not present.has_trigger(name)
        ]

    def side_table_sql(self, target: TableShape, names: Names) -> str:
        """The side table as the ORM declares it: the key (the base table's key columns and types),
        fingerprint, digest, generated blocks, deleted with its row."""
        assert names.side is not None
        side_keys = names.side_keys(target.keys)
        keys = ", ".join(f"{quote(k)} {t} NOT NULL" for k, t in zip(side_keys, target.key_types))
        own = ", ".join(quote(k) for k in side_keys)
        columns = ", ".join(definition for _, definition in (*_stored(names), *_blocks(names)))
        return (
            f"CREATE TABLE {qualified(target.schema, names.side)} ({keys}, {columns}, "
            f"PRIMARY KEY ({own}), FOREIGN KEY ({own}) REFERENCES {qualified(target.schema, target.table)} "
            f"({', '.join(quote(k) for k in target.keys)}) ON DELETE CASCADE)"
        )

    def record(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> DDLPlan:
        """The registry entry, written first (its undo deletes it)."""
        sql = REGISTRY_INSERT.format(settings=":settings", source=":source")
        params = registry_values(target, names, fingerprinter)
        params["source"] = json.dumps(params["source"])
        undo = f"DELETE FROM {REGISTRY_TABLE} WHERE table_schema = :table_schema AND table_name = :table_name"
        return self.plan([Step(sql, f"record {target.schema}.{target.table} in {REGISTRY_TABLE}", params, undo=undo)])

    def attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter, present: Present = Present()) -> DDLPlan:
        """The registry entry, then the columns (or side table) and triggers; what ``present``
        holds already is skipped. Indexes are :meth:`create_indexes`."""
        steps = [] if present.recorded else list(self.record(target, names, fingerprinter).steps)
        if names.side:
            if not present.side:
                drop = f"DROP TABLE {qualified(target.schema, names.side)}"
                steps.append(Step(self.side_table_sql(target, names), f"create side table {target.schema}.{names.side}", undo=drop))
        else:
            steps += self._column_steps(target.schema, target.table, names, present, adding=True)
        steps += self._create_triggers(target, names, present)
        return self.plan(steps)

    def resume_attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter, present: Present) -> DDLPlan:
        """Finish what a run that stopped halfway (and could not be undone) left."""
        return self.attach(target, names, fingerprinter, present)

    def create_indexes(
        self, schema: str, names: Names, holder_keys: Sequence[str] = (), *, concurrently: bool = False,
        present: Present = Present(),
    ) -> DDLPlan:  # fmt: skip
        """One online build per missing block index, whatever ``concurrently`` says (writers
        carry on; only the metadata lock at its start and end waits, bounded)."""
        holder = names.holder
        steps = []
        for index, block in zip(names.indexes, names.indexed_blocks):
            if present.has_index(index):
                continue
            add = f"ADD INDEX {quote(index)} ({_index_columns(names, block)})"
            steps.append(Step(
                _alter(schema, holder, [add], ONLINE), f"build index {index} on {schema}.{holder}",
                undo=_alter(schema, holder, [f"DROP INDEX {quote(index)}"], ONLINE), online=True,
            ))  # fmt: skip
        return self.plan(steps)

    def drop_indexes(self, schema: str, names: Names, *, concurrently: bool = False, present: Present | None = None) -> DDLPlan:
        """The block indexes (those ``present``; all when unknown, offline), online, in one statement."""
        dropped = [(i, b) for i, b in zip(names.indexes, names.indexed_blocks) if present is None or present.has_index(i)]
        if not dropped:
            return self.plan([])
        drops = [f"DROP INDEX {quote(index)}" for index, _ in dropped]
        adds = [f"ADD INDEX {quote(index)} ({_index_columns(names, block)})" for index, block in dropped]
        return self.plan([Step(
            _alter(schema, names.holder, drops, ONLINE), f"drop block indexes of {schema}.{names.holder}",
            undo=_alter(schema, names.holder, adds, ONLINE), online=True,
        )])  # fmt: skip

    def detach(self, table: TableFacts, names: Names, source: Sequence[str], present: Present) -> DDLPlan:
        """Remove what :meth:`attach` and :meth:`create_indexes` created, of what is ``present``:
        triggers first (a trigger naming a dropped column would fail every write), then indexes,
        generated and stored columns (or the side table), then the registry entry and cursor.
        Each statement but the last ones can be undone (the triggers' undo needs their text: the
        recorded source, the table's key as it is now), so a detach that stops halfway puts the
        attachment back (fingerprints of dropped stored columns are gone: backfill refills them)."""
        target = TableShape(table.schema, table.name, table.keys, table.key_types, tuple(source))
        steps = [
            Step(_drop_trigger(target.schema, name), f"drop trigger {name}", undo=sql)
            for name, sql in self.triggers(target, names)
            if present.has_trigger(name)
        ]
        if names.side:
            if present.side:
                steps.append(Step(
                    f"DROP TABLE {qualified(target.schema, names.side)}", f"drop side table {target.schema}.{names.side}",
                    undo=self.side_table_sql(target, names),
                ))  # fmt: skip
        else:
            steps += self.drop_indexes(target.schema, names, present=present).steps
            steps += self._column_steps(target.schema, target.table, names, present, adding=False)
        return self.plan(steps) + self.forget(target.schema, target.table)

    def drop_leftovers(self, schema: str, side_tables: Sequence[str], names: Names) -> DDLPlan:
        # Triggers go with their table on MySQL/MariaDB: only side tables can be left.
        return self.plan(Step(f"DROP TABLE {qualified(schema, side)}", f"drop side table {schema}.{side}") for side in side_tables)


    # -- algorithm version 3 in place: the wide signature added to a version 2 table ----------

    def widen(
        self, target: TableShape, names: Names, fingerprinter: Fingerprinter, cursor: str, present: Present, *,
        record: bool = True, set_aside: bool = False,
    ) -> DDLPlan:  # fmt: skip
        """Stage a move to version 3, whose fingerprint is version 2's (so every one is kept):
        the resume cursor first (its row proves what follows is simsql's; ``record=False`` when
        a resumed move has it), words 1-3 and the wide blocks on the holder (instant where the
        server can), and in columns mode the triggers that clear words with the fingerprint and
        the move's own (:func:`widen_trigger_sql`). What ``present`` holds is skipped; each step
        has its undo.

        ``set_aside``: MariaDB adds a stored column to a table whose generated columns are
        indexed neither instantly nor online (it rebuilds the table under a shared lock), but
        adds it instantly once those indexes are gone. So the four block indexes are dropped
        (online), the columns added (instant), and the indexes built again online at once:
        writers never wait beyond a metadata lock, and near-duplicate queries read the table
        without its block indexes only while they build."""
        wide = names.with_wide(True)
        params = {"schema": target.schema, "cursor": cursor, "config_id": fingerprinter.config_id}
        insert = (f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase) "
                  "VALUES (:schema, :cursor, :config_id, 'scan')")  # fmt: skip
        undo = f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name = :cursor"
        steps = [Step(insert, f"record refingerprint of {target.schema}.{target.table}", params, undo=undo)] if record else []
        columns = self._column_steps(target.schema, wide.holder, wide, present, adding=True)
        narrow = names.with_wide(False)
        aside = set_aside and bool(columns) and any(present.has_index(i) for i in narrow.indexes)
        if aside:
            mark = {"schema": target.schema, "marker": names.set_aside_marker, "config_id": fingerprinter.config_id}
            steps.append(Step(
                f"INSERT INTO {PROGRESS_TABLE} (table_schema, table_name, config_id, phase) VALUES (:schema, :marker, :config_id, 'done')",
                f"record that the block indexes of {target.schema}.{wide.holder} are set aside", mark,
                undo=f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name = :marker",
            ))  # fmt: skip
            steps += self.drop_indexes(target.schema, narrow, present=present).steps
        steps += columns
        if aside:  # the ones dropped, built again
            steps += self.restore_set_aside(target, names, present.without_indexes(narrow.indexes)).steps
        if not names.side:
            triggers = [(wide.words_triggers[u], words_trigger_sql(wide, u, target.schema)) for u in (False, True)]
            triggers.append((wide.widen_trigger, widen_trigger_sql(wide, target.schema)))
            steps += [
                Step(sql, f"create trigger {name} on {target.schema}.{target.table}", undo=_drop_trigger(target.schema, name))
                for name, sql in triggers if not present.has_trigger(name)
            ]  # fmt: skip
        return self.plan(steps)

    def widen_switch(self, target: TableShape, names: Names, fingerprinter: Fingerprinter) -> DDLPlan:
        """The table recorded as version 3 with the wide signature (writers of version 2 are
        refused from this commit on), then the move's trigger dropped: the words triggers stay."""
        wide = names.with_wide(True)
        params = {"schema": target.schema, "table": target.table, "config_id": fingerprinter.config_id,
                  "settings": json.dumps(fingerprinter.settings, sort_keys=True), "mode": wide.recorded_mode}  # fmt: skip
        steps = [Step(
            f"UPDATE {REGISTRY_TABLE} SET config_id = :config_id, settings = :settings, mode = :mode "
            "WHERE table_schema = :schema AND table_name = :table", f"record {fingerprinter.config_id} for {target.table}",
            params,
        )]  # fmt: skip
        if not names.side:
            steps.append(Step(f"DROP TRIGGER IF EXISTS {qualified(target.schema, wide.widen_trigger)}", f"drop trigger {wide.widen_trigger}"))
        return self.plan(steps)

    def restore_set_aside(self, target: TableShape, names: Names, present: Present) -> DDLPlan:
        """The block indexes a move set aside (those not ``present``), built online, then the
        row that said so forgotten."""
        params = {"schema": target.schema, "marker": names.set_aside_marker}
        forget = Step(f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name = :marker",
                      f"forget that the block indexes of {target.schema}.{names.holder} were set aside", params)  # fmt: skip
        return self.plan([*self.create_indexes(target.schema, names.with_wide(False), present=present).steps, forget])

    def unwiden(
        self, target: TableShape, names: Names, cursor: str, present: Present, *, set_aside: bool = False, marked: bool = False
    ) -> DDLPlan:  # fmt: skip
        """Remove an unfinished move to version 3 (abandoned, or before a detach): its triggers,
        the wide indexes and columns, its cursor; the version 2 attachment is as before it."""
        wide = names.with_wide(True)
        params = {"schema": target.schema, "cursor": cursor}
        where = "WHERE table_schema = :schema AND table_name = :cursor"
        forget = Step(f"DELETE FROM {PROGRESS_TABLE} {where}", "forget the refingerprint cursor", params)
        if names.wide:  # recorded as version 3 already: only the move's rule and cursor are left
            triggers = [] if names.side else [wide.widen_trigger]
            return self.plan([*(Step(f"DROP TRIGGER IF EXISTS {qualified(target.schema, t)}", f"drop trigger {t}") for t in triggers), forget])
        triggers = [*wide.words_triggers, wide.widen_trigger] if not names.side else []
        steps = [Step(f"DROP TRIGGER IF EXISTS {qualified(target.schema, t)}", f"drop trigger {t}") for t in triggers]
        drops = [f"DROP INDEX {quote(i)}" for i in wide.wide_indexes if present.has_index(i)]
        if drops:
            steps.append(Step(_alter(target.schema, wide.holder, drops, ONLINE), f"drop wide indexes of {wide.holder}", online=True))
        only = (*wide.wide_words, *wide.wide_blocks)
        columns = self._column_steps(target.schema, wide.holder, wide, present, adding=False, only=only)
        narrow = names.with_wide(False)
        kept = [i for i in narrow.indexes if present.has_index(i)]
        aside = set_aside and bool(columns) and bool(kept)
        if aside:
            steps += self.drop_indexes(target.schema, narrow, present=present).steps
        steps += columns
        if marked:  # killed while they were set aside (widen(set_aside=True)): all back
            steps += self.restore_set_aside(target, names, present.without_indexes(narrow.indexes)).steps
        elif aside:
            steps += self.create_indexes(target.schema, narrow, present=present.without_indexes(kept)).steps
        return self.plan([*steps, forget])


MYSQL_DDL = MySQLDDL()

__all__ = [
    "MYSQL_DDL",
    "MySQLDDL",
    "create_trigger_sql",
    "digest_sql",
    "drop_trigger_sql",
    "quote",
    "row_trigger_sql",
    "stale_trigger_sql",
    "trigger_names",
    "widen_trigger_sql",
    "words_trigger_sql",
]
