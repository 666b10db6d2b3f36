"""What the lifecycle and a backend say to each other: catalog facts in, DDL plans out.

The lifecycle reads the catalog (:class:`TableFacts`, :class:`Present`), asks the backend's
describer (:class:`DDLDescriber`) for a :class:`DDLPlan`, and runs it. A plan is text, so Alembic's offline
mode can print it and tests can read it; nothing in this module touches a database. The split is
Alembic's own (``ops`` describe, ``toimpl`` run).
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..schema.names import PROGRESS_TABLE, REGISTRY_TABLE, Names, record_values
from ..text.errors import SchemaError
from ..text.fingerprint import Fingerprinter
from ..text.vectors import AnyFingerprinter


@dataclass(frozen=True)
class Step:
    """One statement. ``concurrently`` ones must run outside a transaction block, alone.

    Where DDL is not transactional (MySQL/MariaDB) a step also says how to take it back
    (``undo``, run with the same ``params``) so a plan that stops halfway can leave the table
    as it found it; ``fallback`` is the same change by a slower online algorithm, tried when
    the server refuses ``sql``'s; an ``online`` step may run long without blocking writers
    (an index build, an online rebuild), so only its lock waits are bounded.
    """

    sql: str
    what: str
    params: Mapping[str, Any] = field(default_factory=dict)
    concurrently: bool = False
    undo: str = ""
    fallback: str = ""
    online: bool = False


@dataclass(frozen=True)
class DDLPlan:
    """Statements in the order they must run; transactional ones form one transaction.
    ``dialect``: the backend (:attr:`Backend.name`) the statements are written for (None: any)."""

    steps: tuple[Step, ...] = ()
    dialect: str | None = None

    def __add__(self, other: DDLPlan) -> DDLPlan:
        if self.dialect and other.dialect and self.dialect != other.dialect:
            raise ValueError(f"cannot join a {self.dialect} plan and a {other.dialect} plan")
        return DDLPlan(self.steps + other.steps, self.dialect or other.dialect)

    def __bool__(self) -> bool:
        return bool(self.steps)

    @property
    def sql(self) -> list[str]:
        return [step.sql for step in self.steps]


@dataclass(frozen=True)
class TableShape:
    """What DDL needs to know about the user's table (from the catalog or from arguments)."""

    schema: str
    table: str
    keys: tuple[str, ...]
    key_types: tuple[str, ...]
    source: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.table

    def __post_init__(self) -> None:
        if not self.keys:
            raise SchemaError(f"table {self.schema}.{self.table} has no primary key; simsql needs one to find rows again")
        if not self.source:
            raise SchemaError("name at least one text column to fingerprint")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    is_text: bool


@dataclass(frozen=True)
class TableFacts:
    """One table as the catalog describes it right now."""

    schema: str
    name: str
    kind: str
    """``r`` table, ``p`` partitioned table (PostgreSQL's ``pg_class.relkind`` letters)."""
    columns: dict[str, Column]
    keys: tuple[str, ...]
    triggers: tuple[str, ...]
    """Names of the table's own (non-internal) triggers."""

    @property
    def key_types(self) -> tuple[str, ...]:
        return tuple(self.columns[k].type for k in self.keys)


Partition = tuple[str, str | None, bool]
"""(relation, parent, is_leaf) of one member of a partitioned table, parents first."""


@dataclass(frozen=True)
class Present:
    """What of an attachment exists already, as the catalog found it: the holder's columns and
    indexes, the user table's triggers, whether the side table and the registry row exist, the
    indexes a failed concurrent build left invalid, and the partitions of a partitioned holder
    (read for concurrent builds only). Names compare case-insensitively where the server
    compares them so (``fold``; MySQL/MariaDB column and index names)."""

    columns: frozenset[str] = frozenset()
    triggers: frozenset[str] = frozenset()
    indexes: frozenset[str] = frozenset()
    side: bool = False
    recorded: bool = False
    holder: bool = False
    invalid: tuple[str, ...] = ()
    partitions: tuple[Partition, ...] = ()
    fold: bool = True

    @classmethod
    def of(
        cls, columns: Iterable[str] = (), triggers: Iterable[str] = (), indexes: Iterable[str] = (),
        side: bool = False, recorded: bool = False, *, holder: bool = False, invalid: Sequence[str] = (),
        partitions: Sequence[Partition] = (), fold: bool = True,
    ) -> Present:  # fmt: skip
        def names(found: Iterable[str]) -> frozenset[str]:
            return frozenset(n.lower() if fold else n for n in found)

        return cls(names(columns), names(triggers), names(indexes), side, recorded, holder, tuple(invalid),
                   tuple(partitions), fold)  # fmt: skip

    def _key(self, name: str) -> str:
        return name.lower() if self.fold else name

    def has_column(self, name: str) -> bool:
        return self._key(name) in self.columns

    def has_trigger(self, name: str) -> bool:
        return self._key(name) in self.triggers

    def has_index(self, name: str) -> bool:
        return self._key(name) in self.indexes

    def without_indexes(self, names: Iterable[str]) -> Present:
        """What will be present once the indexes ``names`` are dropped (a plan that drops and
        builds them again in one run reads it)."""
        gone = {self._key(name) for name in names}
        return dataclasses.replace(self, indexes=frozenset(i for i in self.indexes if i not in gone))


REGISTRY_INSERT = (
    f"INSERT INTO {REGISTRY_TABLE} (table_schema, table_name, column_name, config_id, settings, source, mode, side_table) "
    "VALUES (:table_schema, :table_name, :column_name, :config_id, {settings}, {source}, :mode, :side_table)"
)
"""The registry entry's statement; each server fills in how it reads JSON settings and the
list of source columns."""


def registry_values(target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> dict[str, Any]:
    """:func:`simsql.schema.names.record_values` as bound values of a text statement (settings
    as JSON text; ``source`` stays a list, PostgreSQL's ``text[]``)."""
    values = record_values(
        target.schema, target.table, fingerprinter, target.source, names.recorded_mode, names.side, names.prefix
    )
    values["settings"] = json.dumps(values["settings"], sort_keys=True)
    return values


class DDLDescriber(ABC):
    """Describes simsql's DDL on one server family as a :class:`DDLPlan`, and runs nothing.

    One implementation per backend (:attr:`simsql.dialects.Backend.ddl`). Every method takes
    what the catalog said, or the same values given by hand for offline SQL, and returns the
    statements in the order they must run. The objects described are exactly those the ORM
    creates for a ``SimHashMixin`` table or the side table of :func:`simsql.attach_model`.
    """

    name: ClassVar[str]
    """The backend the plans are written for (:attr:`DDLPlan.dialect`)."""

    def plan(self, steps: Iterable[Step]) -> DDLPlan:
        return DDLPlan(tuple(steps), self.name)

    @abstractmethod
    def attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> DDLPlan:
        """Fingerprint columns (or the side table), the trigger(s) that keep the digest
        invariant, and the registry entry; the indexes are :meth:`create_indexes`."""

    @abstractmethod
    def record(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter) -> DDLPlan:
        """The registry entry alone: :meth:`attach`'s last part, and all of adopting the objects a
        mixin model's ``create_all`` made (they exist already, exactly as simsql makes them)."""

    @abstractmethod
    def resume_attach(self, target: TableShape, names: Names, fingerprinter: AnyFingerprinter, present: Present) -> DDLPlan:
        """An attachment recorded with these settings already: what is left to do (an
        attachment made by an older simsql, a run that stopped halfway); empty when whole."""

    @abstractmethod
    def create_indexes(
        self, schema: str, names: Names, holder_keys: Sequence[str], *, concurrently: bool = False,
        present: Present = Present(),
    ) -> DDLPlan:  # fmt: skip
        """Covering indexes on the four blocks of ``names.holder``; ``present`` says which
        exist, which a failed build left invalid, and the partitions of a partitioned holder."""

    @abstractmethod
    def drop_indexes(self, schema: str, names: Names, *, concurrently: bool = False, present: Present | None = None) -> DDLPlan:
        """The block indexes (those ``present``; all when unknown)."""

    @abstractmethod
    def detach(self, table: TableFacts, names: Names, source: Sequence[str], present: Present) -> DDLPlan:
        """Remove what :meth:`attach` and :meth:`create_indexes` created, of what is ``present``,
        then the registry entry and backfill cursor. ``table``: the user's table as it is now;
        ``source``: the recorded text columns."""

    def drop_attachment(
        self, schema: str, names: Names, *, triggers: Sequence[str] = (), columns: Sequence[str] | None = None
    ) -> DDLPlan:
        """Remove what :meth:`attach` created, described from names alone (no catalog: an
        offline migration script). Only a family whose backend writes offline scripts
        (:attr:`simsql.dialects.Backend.offline_scripts`) describes it."""
        raise NotImplementedError(f"{self.name} describes no DDL without its catalog (offline scripts)")

    def forget(self, schema: str, table: str, *, progress: bool = True) -> DDLPlan:
        """Delete the registry entry and the backfill cursor of a table (portable SQL)."""
        params = {"schema": schema, "table": table}
        where = "WHERE table_schema = :schema AND table_name = :table"
        steps = [Step(f"DELETE FROM {REGISTRY_TABLE} {where}", f"remove {schema}.{table} from {REGISTRY_TABLE}", params)]
        if progress:
            steps.append(Step(f"DELETE FROM {PROGRESS_TABLE} {where}", f"remove backfill cursor of {schema}.{table}", params))
        return DDLPlan(tuple(steps))

    def forget_cursors(self, schema: str, table: str, cursor: str) -> DDLPlan:
        """Delete a finished refingerprint's cursor and the table's own backfill cursor."""
        params = {"schema": schema, "table": table, "cursor": cursor}
        sql = f"DELETE FROM {PROGRESS_TABLE} WHERE table_schema = :schema AND table_name IN (:table, :cursor)"
        return self.plan([Step(sql, "forget backfill cursors", params)])

    def drop_leftovers(self, schema: str, side_tables: Sequence[str], names: Names) -> DDLPlan:
        """What simsql created for a table dropped outside it that the drop left behind: the
        ``side_tables`` (found in the catalog, nothing of the user's depending on them), and
        whatever else the server keeps apart from the table (PostgreSQL: the trigger functions
        of ``names`` and of its shadow set). The registry entry is :meth:`forget`'s."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a dropped table's leftovers")

    # -- a refingerprint's shadow set, where the backend refingerprints online ----------------

    def stage(self, target: TableShape, shadow: Names, fingerprinter: Fingerprinter, cursor: str) -> DDLPlan:
        """The shadow fingerprint set and its resume cursor, in one transaction."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a refingerprint")

    def unstage(self, target: TableShape, shadow: Names, cursor: str) -> DDLPlan:
        """Remove a shadow set (an abandoned refingerprint); the attachment is untouched."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a refingerprint")

    def switch(
        self, target: TableShape, names: Names, shadow: Names, fingerprinter: Fingerprinter, cursor: str,
        side_keys: tuple[str, str] | None = None, partitions: Sequence[str] = (),
    ) -> DDLPlan:  # fmt: skip
        """Replace the attachment's fingerprints by the shadow set, in one transaction."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a refingerprint")

    # -- a move to algorithm version 3 in place, where the backend does not stage a shadow set --

    def widen(
        self, target: TableShape, names: Names, fingerprinter: Fingerprinter, cursor: str, present: Present, *,
        record: bool = True, set_aside: bool = False,
    ) -> DDLPlan:  # fmt: skip
        """Words 1-3, the wide blocks and what keeps them right while a fill writes them, and
        the resume cursor (``record``: a resumed move has it), beside a version 2 attachment
        (whose fingerprints version 3 keeps). ``set_aside``: drop the block indexes for the
        columns' sake and build them again online right after (a server that adds a column
        to a table with indexed generated columns neither instantly nor online)."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a move to version 3 in place")

    def widen_switch(self, target: TableShape, names: Names, fingerprinter: Fingerprinter) -> DDLPlan:
        """The table recorded as version 3 with the wide signature; the move's own rule dropped."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a move to version 3 in place")

    def restore_set_aside(self, target: TableShape, names: Names, present: Present) -> DDLPlan:
        """Build again the block indexes a move to version 3 set aside (``widen(set_aside=True)``)
        and were not built yet (not ``present``)."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a move to version 3 in place")

    def unwiden(
        self, target: TableShape, names: Names, cursor: str, present: Present, *, set_aside: bool = False, marked: bool = False
    ) -> DDLPlan:  # fmt: skip
        """Remove an unfinished move to version 3; the version 2 attachment is as before it.
        ``set_aside``: the block indexes are set aside to drop the columns (as
        :meth:`widen`'s); ``marked``: the move was killed while they were set aside."""
        raise NotImplementedError(f"{type(self).__name__} does not describe a move to version 3 in place")


__all__ = ["Column", "DDLDescriber", "ListsDDL", "Partition", "DDLPlan", "Present", "REGISTRY_INSERT", "Step", "TableFacts", "TableShape", "registry_values"]


class ListsDDL(ABC):
    """Describes the DDL of partition lists (:mod:`simsql.text.lists`) on one server family:
    the list column on the holder table and its covering index. One per backend
    (:attr:`simsql.dialects.Backend.lists_ddl`); runs nothing."""

    name: ClassVar[str]

    def plan(self, steps: Iterable[Step]) -> DDLPlan:
        return DDLPlan(tuple(steps), self.name)

    @abstractmethod
    def add(
        self, schema: str, names: Names, holder_keys: Sequence[str], present: Present, *, concurrently: bool = True,
        empty: bool = False,
    ) -> DDLPlan:  # fmt: skip
        """The list column (nullable integer) and its covering index (list, then the signature
        words and the key), each unless ``present``; the index built without blocking writers
        (``concurrently=False``: inside the plan's transaction, PostgreSQL). ``empty``: the table
        holds no row, so a server that would copy it to add the column may (nothing to copy)."""

    @abstractmethod
    def refresh(self, schema: str, table: str) -> DDLPlan:
        """What a fit runs once it has rewritten every row's list: the table's statistics (and on
        PostgreSQL its visibility map, without which the covering index is read with a visit to
        every row's heap page) made current at once, not at the next autovacuum."""

    @abstractmethod
    def write_lists(self, connection: Any, relation: Any, keys: Sequence[str], fingerprint: str, part: str, rows: Sequence[Sequence[Any]]) -> int:
        """Set ``part`` of each row of ``relation`` (a ``table()``) named by ``rows`` (``(key...,
        fingerprint, list)``, as read) whose fingerprint is still the one read, in one set-based
        statement; the rows it changed."""

    def tidy(self, schema: str, table: str) -> DDLPlan:
        """What a fit runs between its batches so the space of the row versions it replaced is
        reused by the next ones instead of growing the table (PostgreSQL: a ``VACUUM`` that skips
        a table it cannot lock at once, and leaves the indexes to :meth:`rebuild`). Nothing
        where an update rewrites in place (InnoDB touches only the indexes whose columns changed)."""
        return self.plan([])

    def rebuild(self, schema: str, names: Names, indexes: Sequence[str]) -> DDLPlan:
        """An online rebuild of ``indexes`` of ``names.holder`` (grown by a fit's writes beyond
        what they held before it), each on its own; nothing where a fit does not bloat them."""
        return self.plan([])

    def index_sizes(self, connection: Any, schema: str, table: str) -> dict[str, int]:
        """Bytes of each valid index of ``schema.table`` (empty where a fit needs no rebuild)."""
        return {}

    def stopped_rebuilds(self, connection: Any, schema: str, table: str) -> DDLPlan:
        """Dropping what an online rebuild stopped midway (an error, ``kill -9``) left on
        ``schema.table``: nothing where rebuilds leave nothing."""
        return self.plan([])

    @abstractmethod
    def drop(self, schema: str, names: Names, present: Present, *, concurrently: bool = True, column: bool = True) -> DDLPlan:
        """The covering index and the list column (``column=False``: the index alone), of what is
        ``present``; ``concurrently=False`` for a plan that runs in one transaction (a detach)."""
