"""The trigger an ORM-declared table needs, installed by ``create_all`` and found by Alembic.

A ``SimHashMixin`` model's table and an :func:`simsql.attach_model` side table get, with
``create_all``, the trigger that keeps fingerprints true to their text (raw SQL and COPY writers
are covered from the first row), and ``drop_all`` removes it. Autogenerate must write the same
trigger into a migration, so both read one description (:class:`OrmTrigger`) from one registry
of such tables (:func:`orm_trigger`). storage declares the tables (it calls
:func:`install_trigger_on_create`); this module never imports storage: it reads a binding
through the :class:`BoundTable` protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Table, event, inspect

from ..dialects import Backend, backend, execute_sql
from ..schema.names import Names
from ..text.vectors import AnyFingerprinter
from . import registry


class BoundTable(Protocol):
    """What the trigger needs of a :class:`simsql.store.storage.Binding` (read once every mapper is configured)."""

    @property
    def model(self) -> type: ...
    @property
    def names(self) -> Names: ...
    @property
    def source_columns(self) -> tuple[str, ...]: ...
    @property
    def keys(self) -> Any: ...
    @property
    def fingerprinter(self) -> AnyFingerprinter: ...
    @property
    def registry_key(self) -> tuple[str | None, str]: ...


@dataclass(frozen=True)
class OrmTrigger:
    """The trigger an ORM-declared holder table (mixin table, side table of :func:`simsql.attach_model`)
    needs on the user's table. One description, used by ``create_all`` (the Table's DDL events)
    and by Alembic autogenerate (``op.create_simhash_trigger``), so both install the same: the
    backend writes it (:meth:`create_statements`)."""

    names: Names
    source: tuple[str, ...]
    keys: tuple[str, ...]

    def create_statements(self, server: Backend, schema: str | None) -> tuple[str, ...]:
        """The statements creating the trigger on ``server`` (blocks are generated columns in
        both modes, so the trigger does not derive them)."""
        return server.create_trigger_sql(schema, self.names, self.source, self.keys)

    def drop_statements(self, server: Backend, schema: str | None, *, table_dropped: bool = False) -> tuple[str, ...]:
        """The statements dropping it (``table_dropped``: what the table's DROP left)."""
        return server.drop_trigger_sql(schema, self.names, table_dropped=table_dropped)

    def installed_name(self, server: Backend) -> str:
        """The name the catalog lists the trigger under (the first, where it is several)."""
        return server.trigger_names(self.names)[0]


_ORM_TRIGGERS: dict[Table, Callable[[], BoundTable]] = {}
"""Every ORM-declared table whose ``create_all`` installs a trigger, and how to get its binding
(called once every mapper is configured). Read by :func:`orm_trigger`, which is how Alembic's
autogenerate comparator (``simsql.alembic``) finds the same triggers: a front end reads this
registry, storage never reaches up to the front end."""


_TRIGGER_TABLE_LISTENERS: list[Callable[[Table], None]] = []


def on_trigger_table(listener: Callable[[Table], None]) -> None:
    """Call ``listener(table)`` whenever a table whose ``create_all`` installs a trigger is
    declared (a ``SimHashMixin`` model, the side table of :func:`simsql.attach_model`).

    The hook by which a layer above learns of them without storage importing it: the package's
    top level uses it to load simsql's Alembic integration when the model is declared inside an
    Alembic run (an application's ``env.py``), so autogenerate sees the trigger."""
    _TRIGGER_TABLE_LISTENERS.append(listener)


def orm_trigger(table: Table) -> OrmTrigger | None:
    """The trigger ``create_all`` installs with ``table``, if any (every mapper configured)."""
    binding = _ORM_TRIGGERS.get(table)
    if binding is None:
        return None
    bound = binding()
    base: Any = inspect(bound.model).local_table
    names = Names(base.name, bound.names.prefix, bound.names.side, wide=bound.names.wide, layout=bound.names.layout)
    return OrmTrigger(names, bound.source_columns, tuple(k.name for k in bound.keys))


def orm_trigger_tables() -> tuple[Table, ...]:
    """The tables :func:`orm_trigger` knows, in the order they were declared."""
    return tuple(_ORM_TRIGGERS)


def install_trigger_on_create(table: Table, binding: Callable[[], BoundTable]) -> None:
    """``create_all`` also creates the trigger that keeps fingerprints honest (and
    ``drop_all`` its function): raw SQL and COPY writers are covered from the first row.
    ``binding`` is called at create time, when every mapper is configured. Autogenerate finds
    the same trigger through :func:`orm_trigger` (simsql.alembic's comparator)."""
    _ORM_TRIGGERS[table] = binding
    for listener in _TRIGGER_TABLE_LISTENERS:
        listener(table)

    def trigger_of(target: Table) -> OrmTrigger:
        trigger = orm_trigger(target)
        assert trigger is not None
        return trigger

    def create(target: Table, connection: Any, **kw: Any) -> None:
        server, trigger = backend(connection), trigger_of(target)
        schema = server.trigger_schema(connection, target.schema)
        server.clear_trigger_names(connection, schema, trigger.names)
        for statement in trigger.create_statements(server, schema):
            execute_sql(connection, statement)
        # recorded in simsql's registry (installed first where missing, as attach_table does, for
        # a table of the connection's own schema: a table made in a schema of its own, such as
        # the demo's, installs nothing elsewhere), so its command line sees the table like an
        # attached one (status, backfill, similar, dupes)
        bound = binding()
        table_schema, name = bound.registry_key
        if table_schema is None or table_schema == registry.current_schema(connection):
            registry.install_when_needed(connection)
        if trigger.names.side is None:  # the table was just made: an entry of its name is of one dropped outside simsql
            registry.remove(connection, name, table_schema)
        registry.claim(connection, name, table_schema, bound.fingerprinter, bound.source_columns, bound.names)

    def drop(target: Table, connection: Any, **kw: Any) -> None:
        server, trigger = backend(connection), trigger_of(target)
        schema = server.trigger_schema(connection, target.schema)
        for statement in trigger.drop_statements(server, schema, table_dropped=trigger.names.side is None):
            execute_sql(connection, statement)
        table_schema, name = binding().registry_key
        registry.remove(connection, name, table_schema)  # what create recorded

    def check(target: Table, connection: Any, **kw: Any) -> None:
        # before the table exists: its trigger could not work on a server without the digest,
        # and a name the server would cut (PostgreSQL: 63 bytes) would not be the one recorded
        server = backend(connection)
        server.check_digest(connection)
        server.check_identifier(target.name, "table name")

    event.listen(table, "before_create", check)
    event.listen(table, "after_create", create)
    event.listen(table, "after_drop", drop)
