"""The declared database seam: one :class:`Backend` class per server family.

Everything simsql says or asks differently per server lives behind this interface: column and
block DDL (:attr:`Backend.ddl`), the trigger that keeps fingerprints honest, index builds,
locks and time bounds, catalog reads, the bit-count and XOR expressions (compiled per dialect,
see :mod:`.constructs`), identifier limits, and the statements of a backfill. Code outside
``simsql/dialects`` asks ``backend(connection)`` and never branches on the server's name.

The pattern is Alembic's ``DefaultImpl``: a family registers itself by naming the SQLAlchemy
dialects it serves (``__dialect__``); :func:`backend` picks the class from a dialect, a
connection or an engine. A *variant* of a family (Citus is PostgreSQL with distributed tables)
is a subclass without ``__dialect__`` that overrides :meth:`Backend.detect`: it is chosen when
:func:`backend` is given a connection or engine whose server it recognises, and overrides only
what differs (``class CitusBackend(PostgresBackend)``, a third branch nowhere).
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Literal

from sqlalchemy import BigInteger, TableClause, Uuid, text
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.types import TypeEngine

from ..schema.names import BLOCK_COUNT, Names, check_name
from ..text.bits import to_signed, to_unsigned
from ..text.errors import UnsupportedDatabase
from .batch import BatchSQL, Job
from .ddl_plan import DDLDescriber, ListsDDL, Partition, TableFacts
from .sqltext import sql_identifier
from .vector_index import NO_PGVECTOR, VectorIndexSQL

BLOCK_BITS = 16
BLOCK_MASK = (1 << BLOCK_BITS) - 1

ManyTargetsPlan = Literal["lateral", "window"]
"""How :func:`simsql.most_similar_many` probes many targets in one statement: ``lateral``
(the targets as arrays, each probing the block indexes through a LATERAL subquery) or
``window`` (a derived table of target rows joined to each block index, cut per target with
``ROW_NUMBER()``)."""

Bind = Dialect | Connection | Engine

_FAMILIES: dict[str, type[Backend]] = {}
_CHOSEN: weakref.WeakKeyDictionary[Dialect, Backend] = weakref.WeakKeyDictionary()


class Backend(ABC):
    """One server family: what simsql emits and asks on it.

    The base class holds the portable behaviour (standard SQL, a signed ``BIGINT`` for the 64
    fingerprint bits); a family subclass declares ``__dialect__`` and implements the rest. An
    instance wraps the SQLAlchemy dialect it serves and reads the server's version from it
    when asked, so one instance per engine (per dialect object) is enough.
    """

    __dialect__: ClassVar[tuple[str, ...]] = ()
    """The SQLAlchemy dialect names this family serves (a family registers itself by them)."""
    name: ClassVar[str] = "default"
    """The family's name in plans (:attr:`simsql.dialects.ddl_plan.DDLPlan.dialect`)."""
    supported: ClassVar[str] = ""
    """The servers and versions it runs on, as a refusal names them (``"PostgreSQL >= 14"``)."""
    variants: ClassVar[list[type[Backend]]] = []
    """Subclasses recognised from the server itself (:meth:`detect`), asked in the order they
    were defined; each subclass gets its own list."""

    ddl: ClassVar[DDLDescriber]
    """The describer of this family's DDL (attach, indexes, detach, refingerprint)."""
    lists_ddl: ClassVar[ListsDDL]
    """The describer of the partition lists' column and covering index."""
    vector_index: ClassVar[VectorIndexSQL] = NO_PGVECTOR
    """pgvector's facts, HNSW DDL and ``<=>`` (the portable default: no pgvector)."""

    transactional_ddl: ClassVar[bool] = True
    """DDL runs inside a transaction: a plan's transactional steps commit or vanish together.
    Where it does not, each step carries its undo and a failed plan is taken back."""
    online_index_builds: ClassVar[bool] = False
    """Every block-index build lets writers in, so ``concurrently`` does not apply (its lock
    waits are bounded like any DDL). False: online only when built ``concurrently``."""
    refingerprints_online: ClassVar[bool] = True
    """:func:`simsql.refingerprint` can stage a second fingerprint set and switch to it."""
    folds_names: ClassVar[bool] = False
    """Column and index names compare case-insensitively (``Simhash`` is ``simhash``)."""
    backfill_isolation: ClassVar[str] = "READ COMMITTED"
    """The isolation level a backfill's connections set for themselves, whatever the role's or
    server's default: the level its batch statements are written for. PostgreSQL's batch UPDATE
    re-reads a row a writer changed meanwhile under READ COMMITTED; under REPEATABLE READ or
    SERIALIZABLE it fails with a serialization error instead."""
    offline_scripts: ClassVar[bool] = True
    """Its DDL can be printed as a script a SQL client runs as written (Alembic's ``--sql``)."""
    stored_blocks: ClassVar[bool] = True
    """Block columns are ``STORED`` generated columns (else ``VIRTUAL``: values only in the
    block indexes, and a live table gains them without being copied)."""
    include_columns: ClassVar[bool] = True
    """Indexes ``INCLUDE`` non-key columns; else a block index's covering columns
    (``COVERING_INFO``) are trailing key columns."""
    lazy_branches: ClassVar[bool] = True
    """The executor pulls ``UNION ALL`` branches in order and stops at the ``LIMIT`` (see
    :class:`~simsql.dialects.EagerChoice`); a variant that runs every branch first (Citus) says
    False, and ``most_similar`` then plans band 0 and a guarded scan only."""
    or_probes: ClassVar[bool] = False
    """``similar_to`` on block columns compiles to an ``OR`` of the block probes rather than a
    key semi-join over their union (Citus: one shard task plans a bitmap ``OR`` faster)."""
    rows_by_key: ClassVar[bool] = False
    """:func:`simsql.find_original` reads its candidates' keys and distances in one statement and
    their rows by key (``key IN (...)``) in a second, rather than joining the table to the ranked
    keys in one (Citus: the second is routed to the shards holding those keys; the join ran on
    every shard)."""
    many_targets_plan: ClassVar[ManyTargetsPlan] = "lateral"
    """Which plan :func:`simsql.most_similar_many` builds (see :data:`ManyTargetsPlan`)."""
    activity_view: ClassVar[str] = ""
    """Where an administrator looks for the sessions a timeout names."""
    registry_probe: ClassVar[str] = ""
    """SQL run on a bare DBAPI cursor mid-statement: whether the registry and simsql's version
    table exist (two ``%s`` parameters, their names), and the current schema."""

    fingerprint_type: ClassVar[TypeEngine[Any]] = BigInteger()
    """The column type of a fingerprint (:class:`simsql.SimHash`'s implementation)."""
    digest_type: ClassVar[TypeEngine[Any]] = Uuid()
    """The column type of a text digest (``simsql.store.types.TEXT_DIGEST``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.variants = []
        if "__dialect__" in cls.__dict__:
            for dialect_name in cls.__dialect__:
                _FAMILIES[dialect_name] = cls
        elif "detect" in cls.__dict__:
            parent = next(base for base in cls.__mro__[1:] if issubclass(base, Backend))
            parent.variants.append(cls)

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        # chosen knowing the server, or no variant could apply: :func:`backend` keeps it
        self.settled = not type(self).variants

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.describe_server()}>"

    # -- which server ----------------------------------------------------------------------

    @classmethod
    def detect(cls, connection: Connection) -> bool:
        """Variants: whether the server behind ``connection`` is this variant."""
        return False

    @classmethod
    def describe_dialect(cls, dialect: Dialect) -> str:
        """``'PostgreSQL 13.11'``: the server a refusal names, from the version SQLAlchemy read when it connected."""
        return f"{cls.name} {version_text(getattr(dialect, 'server_version_info', None))}"

    def describe_server(self) -> str:
        return type(self).describe_dialect(self.dialect)

    @property
    def alters_columns_beside_indexed_blocks(self) -> bool:
        """Whether a stored column is added to (or dropped from) a table whose block columns are
        indexed without copying the table or locking out its writers. MariaDB cannot while
        those generated columns are indexed, so a move to version 3 sets the indexes aside
        (:meth:`DDLDescriber.widen`)."""
        return True

    @abstractmethod
    def check_server(self, connection: Connection) -> None:
        """Refuse a server version simsql cannot run on, naming the version found."""

    def check_digest(self, connection: Connection) -> None:
        """Refuse a server whose triggers could not compute simsql's text digests (nothing
        created then); every path that creates triggers asks first."""

    def check_identifier(self, name: str, what: str = "identifier") -> str:
        """Refuse a name the server (or simsql's names derived from it) cannot hold."""
        return check_name(name, what)

    # -- column types and SQL fragments ------------------------------------------------------

    @staticmethod
    def fingerprint_to_db(value: int) -> int:
        """A fingerprint (unsigned, ``[0, 2**64)``) as the column stores it."""
        return to_signed(value)

    @staticmethod
    def fingerprint_from_db(value: int) -> int:
        """A stored fingerprint back as the unsigned value Python sees."""
        return to_unsigned(value)

    @classmethod
    def block_expression_sql(cls, fingerprint_sql: str, index: int) -> str:
        """SQL deriving block ``index`` (0 = most significant) from a quoted 64-bit column."""
        shift = BLOCK_BITS * (BLOCK_COUNT - 1 - index)
        return f"CAST(({fingerprint_sql} >> {shift}) & {BLOCK_MASK} AS INTEGER)"

    def quote(self, name: str) -> str:
        """An identifier, always quoted, by the dialect's preparer's rule, as SQL text (see :func:`sql_identifier`)."""
        return sql_identifier(self.dialect.identifier_preparer, name)

    def qualified(self, schema: str, name: str) -> str:
        return f"{self.quote(schema)}.{self.quote(name)}"

    @abstractmethod
    def digest_sql(self, columns: Sequence[str], row: str = "") -> str:
        """SQL for the digest of a row's text (md5 of its UTF-8 bytes, as
        :func:`simsql.store.storage.text_digest`); ``row`` qualifies the columns (``NEW.``, ``b.``)."""

    def distinct_sql(self, a: str, b: str) -> str:
        """``a`` differs from ``b``, NULL being a value."""
        return f"{a} IS DISTINCT FROM {b}"

    def count_where(self, condition: str) -> str:
        """An aggregate counting the rows where ``condition`` holds (0 when none)."""
        return f"count(*) FILTER (WHERE {condition})"

    # -- statements whose spelling differs ---------------------------------------------------

    @abstractmethod
    def current_schema(self, connection: Connection) -> str:
        """The schema (MySQL: database) unqualified names resolve to."""

    @abstractmethod
    def relation_exists(self, connection: Connection, name: str) -> bool:
        """Whether ``name`` resolves to a table the way an unqualified statement finds it."""

    @abstractmethod
    def insert_new(self, table: Any, values: dict[str, Any]) -> Any:
        """An INSERT of ``values`` that does nothing when the primary key is already there."""

    @abstractmethod
    def upsert(self, table: Any, values: dict[str, Any], keys: Sequence[str], update: Sequence[str]) -> Any:
        """INSERT ``values``, or on a primary-key conflict set the ``update`` columns from them."""

    def prepare_self_join(self, connection: Connection) -> None:
        """Session settings for the all-pairs self-joins of ``near_duplicates``."""

    def hash_joins_expressions(self) -> bool:
        """Whether the server hash-joins on an expression such as ``a.fp & m = b.fp & m``."""
        return True

    def materialize_self_join(self) -> bool:
        """Whether ``near_duplicates`` reads the table's keys and fingerprints once (a
        ``MATERIALIZED`` CTE) and self-joins that, rather than self-joining the table: where the
        server cannot run a self-join on arbitrary values in place (Citus: only joins on the
        distribution column stay on the shards)."""
        return False

    # -- the trigger that keeps fingerprints honest --------------------------------------------

    @abstractmethod
    def trigger_names(self, names: Names) -> tuple[str, ...]:
        """The triggers of an attachment as the catalog lists them (the first one stands for all of them)."""

    @abstractmethod
    def create_trigger_sql(
        self, schema: str | None, names: Names, source: Sequence[str], keys: Sequence[str], *, derive_blocks: bool = False
    ) -> tuple[str, ...]:
        """The statements creating the attachment's trigger(s) on ``names.table``: the row rule
        (columns mode) or the stale-row rule (side-table mode). ``derive_blocks``: the blocks
        are plain columns the trigger fills (a table altered in place)."""

    @abstractmethod
    def drop_trigger_sql(self, schema: str | None, names: Names, *, table_dropped: bool = False) -> tuple[str, ...]:
        """The statements dropping what :meth:`create_trigger_sql` created (``table_dropped``:
        what the table's own DROP did not take with it)."""

    def trigger_schema(self, connection: Connection, schema: str | None) -> str | None:
        """The schema trigger statements name for a table in ``schema`` (None: the table's)."""
        return schema or self.current_schema(connection)

    def clear_trigger_names(self, connection: Connection, schema: str | None, names: Names) -> None:
        """Make simsql's trigger names free again where a dropped table left part of its
        trigger behind (only simsql's own, recognisable leftovers)."""

    # -- catalog reads (names are bound values, never formatted into SQL) --------------------

    @abstractmethod
    def table_facts(self, connection: Connection, schema: str, table: str) -> TableFacts | None:
        """Kind, columns, primary key and triggers of a base table, or None."""

    @abstractmethod
    def triggers_on(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        """The names of ``schema.table``'s own triggers."""

    @abstractmethod
    def schema_triggers(self, connection: Connection, schema: str) -> dict[str, str]:
        """Every trigger of ``schema`` and its table."""

    @abstractmethod
    def index_names(self, connection: Connection, schema: str, table: str) -> tuple[str, ...]:
        """The names of the indexes on ``schema.table``."""

    def invalid_indexes(self, connection: Connection, schema: str, names: Sequence[str]) -> tuple[str, ...]:
        """Which of the indexes ``names`` a failed online build left behind unusable."""
        return ()

    @abstractmethod
    def dependents(self, connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
        """Objects simsql did not create that use ``columns`` of ``schema.table`` (or the
        whole table when ``columns`` is empty), other than the indexes ``own``."""

    def partition_tree(self, connection: Connection, schema: str, table: str) -> list[Partition]:
        """The members of a partitioned table whose indexes simsql builds one by one (none
        where the server indexes a partitioned table as a whole)."""
        return []

    @abstractmethod
    def primary_key_name(self, connection: Connection, schema: str, table: str) -> str:
        """The name of ``schema.table``'s primary key constraint."""

    @abstractmethod
    def triggers_as_written(
        self, connection: Connection, schema: str, names: Names, source: Sequence[str], keys: Sequence[str]
    ) -> bool:
        """Whether the triggers of ``names.table`` that hold simsql's names are exactly those
        :meth:`create_trigger_sql` writes for ``source`` and ``keys`` (names, events, body), and
        nothing else of simsql's names: the proof that simsql made them (``create_all`` of a mixin
        model) before ``simsql attach`` adopts them."""

    @abstractmethod
    def attach_conflicts(self, connection: Connection, facts: TableFacts, names: Names) -> list[str]:
        """Objects simsql did not create that already hold one of ``names`` on the table
        ``facts`` describes (columns, side table, indexes, triggers), as an error lists them."""

    # -- locks and time bounds -----------------------------------------------------------------

    @abstractmethod
    def set_timeouts(self, connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
        """Bound lock waits and statements (PostgreSQL durations; None or "0": unbounded);
        ``local``: until the transaction ends, where the server can scope a setting so."""

    @abstractmethod
    def read_timeouts(self, connection: Connection) -> tuple[Any, ...]:
        """The session's current bounds, in the server's own terms."""

    @abstractmethod
    def reset_timeouts(self, connection: Connection) -> None:
        """The session's bounds as they were before simsql set them."""

    @abstractmethod
    def bounded(self, connection: Connection, lock: str | None, statement: str | None) -> AbstractContextManager[None]:
        """Statements inside run under these bounds; the previous ones come back after."""

    @staticmethod
    @abstractmethod
    def timeout_kind(error: BaseException) -> str | None:
        """``"lock"`` or ``"statement"`` when ``error`` is this server's timeout, else None."""

    def online_ddl_refused(self, error: BaseException) -> str | None:
        """The server's reason when ``error`` refuses to make a change online, else None."""
        return None

    @abstractmethod
    def blockers(self, connection: Connection, relations: Sequence[str]) -> str:
        """Who a DDL on ``relations`` (``schema.table`` text) waits on, as a message says it."""

    @abstractmethod
    def lock_exclusively(self, connection: Connection, schema: str, tables: Sequence[str]) -> None:
        """Until the transaction ends, nobody else reads or writes ``tables`` (of ``schema``),
        taken in the order given. The strongest lock a change of them needs, taken first:
        upgrading a weaker lock later would wait for sessions that wait for it (a deadlock)."""

    @abstractmethod
    def row_estimate(self, connection: Connection, table: TableClause) -> float:
        """The server's estimate of ``table``'s rows, never counted (0 when it has none): what
        :class:`~simsql.dialects.RowEstimate` puts in a statement, read alone (once a minute, by
        :mod:`simsql.queries.plan_size`)."""

    def analyze(self, connection: Connection, schema: str, table: str) -> None:
        """Refresh the planner's statistics of ``table`` (after a bulk load)."""
        connection.execute(text(f"ANALYZE {self.qualified(schema, table)}"))

    @abstractmethod
    def try_advisory_lock(self, connection: Connection, key: int) -> bool:
        """Take the session-level lock ``key`` if free; whether it was taken."""

    @abstractmethod
    def advisory_lock(self, connection: Connection, key: int) -> None:
        """Wait for the session-level lock ``key`` and take it."""

    @abstractmethod
    def advisory_unlock(self, connection: Connection, key: int) -> None:
        """Release the session-level lock ``key``."""

    @abstractmethod
    def advisory_xact_lock(self, connection: Connection, key: int) -> None:
        """Wait for the lock ``key`` and hold it until the connection's open transaction ends,
        committed or rolled back (its changes visible to the next holder): for work inside a
        transaction that is not simsql's to end (an application's migration)."""

    # -- distributed tables ------------------------------------------------------------------

    def distribute(self, connection: Connection, schema: str, table: str, column: str | None, side: str | None) -> None:
        """Distribute ``schema.table`` by ``column`` (None: a reference table) and co-locate
        simsql's side table ``side`` with it, in the connection's transaction. Only a server
        with distributed tables can: here, refused before anything is sent."""
        raise UnsupportedDatabase(f"distribute() needs Citus (the citus extension), but this is {self.describe_server()}")

    # -- backfill ----------------------------------------------------------------------------

    @abstractmethod
    def batch_sql(self, job: Job) -> BatchSQL:
        """The statements of a backfill ``job`` on this server."""


def version_text(version: Sequence[Any] | None) -> str:
    return ".".join(str(part) for part in version) if version else "version unknown"


def families() -> list[type[Backend]]:
    """Every registered family, in the order they registered."""
    return list(dict.fromkeys(_FAMILIES.values()))


def supported() -> str:
    return ", ".join(family.supported for family in families())


def describe_server(dialect: Dialect) -> str:
    """``'MariaDB 10.5.2'``, ``'PostgreSQL 13.11'``, ``"a 'sqlite' database (3.45.1)"``: what a
    refusal names, from the version SQLAlchemy read when it connected (None before that)."""
    family = _FAMILIES.get(dialect.name)
    if family is not None:
        return family.describe_dialect(dialect)
    return f"a {dialect.name!r} database ({version_text(getattr(dialect, 'server_version_info', None))})"


def refuse(dialect: Dialect) -> UnsupportedDatabase:
    return UnsupportedDatabase(f"simsql needs {supported()}, but this is {describe_server(dialect)}")


def family_of(dialect: Dialect) -> type[Backend]:
    """The family serving ``dialect``; any other database is refused, naming what was found."""
    family = _FAMILIES.get(dialect.name)
    if family is None:
        raise refuse(dialect)
    return family


def type_rules(dialect: Dialect | str) -> type[Backend]:
    """The family serving ``dialect`` (or the dialect of that name) for what must work on any
    dialect (column types, the SQL text of a statement printed without a server):
    :class:`Backend`'s portable rules elsewhere."""
    return _FAMILIES.get(dialect if isinstance(dialect, str) else dialect.name, Backend)


def backend(bind: Bind) -> Backend:
    """The :class:`Backend` of a dialect, a connection or an engine; any other database is
    refused with :class:`~simsql.text.errors.UnsupportedDatabase` naming what it found.

    One instance per dialect object (so per engine), kept as long as the dialect lives. Given
    only a dialect, the family is chosen by its name; given a connection or an engine, a
    variant of the family that recognises its server is chosen, once (no variant registered:
    nothing is asked of the server)."""
    dialect = bind if isinstance(bind, Dialect) else bind.dialect
    chosen = _CHOSEN.get(dialect)
    if chosen is not None and (chosen.settled or isinstance(bind, Dialect)):
        return chosen
    family = family_of(dialect)
    if isinstance(bind, Dialect) or not family.variants:
        chosen = family(dialect)
    else:
        chosen = _refine(family, bind)(dialect)
        chosen.settled = True
    _CHOSEN[dialect] = chosen
    return chosen


def _refine(family: type[Backend], bind: Connection | Engine) -> type[Backend]:
    if isinstance(bind, Engine):
        with bind.connect() as connection:
            return _refine(family, connection)
    for variant in family.variants:
        if variant.detect(bind):
            return _refine(variant, bind)
    return family


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a timeout of any server simsql supports."""
    for family in families():
        kind = family.timeout_kind(error)
        if kind is not None:
            return kind
    return None


def variant_type(attribute: str) -> TypeEngine[Any]:
    """The portable column type :class:`Backend` names ``attribute``, with each family's own
    as a SQLAlchemy variant: one type that creates the right column on every server."""
    default: TypeEngine[Any] = getattr(Backend, attribute)
    found = default
    for family in families():
        own = getattr(family, attribute)
        if own is not default:
            found = found.with_variant(own, *family.__dialect__)
    return found


