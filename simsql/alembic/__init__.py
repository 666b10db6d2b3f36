"""Alembic integration: operations for your own migrations, and simsql's own revisions.

In a migration of your application (``alembic revision -m "fingerprint articles"`` writes it
into your own ``alembic/versions``)::

    import simsql.alembic  # registers the operations below on ``op``

    def upgrade():
        op.upgrade_simsql()  # simsql's registry and SQL functions, recorded in simsql_alembic_version
        op.add_simhash("articles", source=["title", "body"], primary_key=["id"])
        op.create_simhash_indexes("articles", concurrently=True)

    def downgrade():
        op.drop_simhash_indexes("articles", concurrently=True)
        op.drop_simhash("articles")
        op.downgrade_simsql()  # removes simsql's objects unless other tables still use them

Why an operation and not ``version_locations``: simsql's revisions are recorded in one place
only, its own version table ``simsql_alembic_version``, whoever applies them (this operation,
``simsql db upgrade`` or :func:`upgrade`), so ``simsql db current`` and your history always
agree and either order works. Your history stays one branch: ``alembic revision`` never writes
into simsql's package, ``alembic upgrade head`` sees one head, no ``depends_on`` is needed.

On MySQL/MariaDB the operations run online only (their DDL is described by
:mod:`simsql.dialects.mysql_ddl`: instant or online, undone statement by statement if one
fails); offline scripts are refused there (trigger bodies would need the ``mysql`` client's
``DELIMITER``), and ``concurrently`` changes nothing (index builds are always online).

On PostgreSQL every operation works online and offline (``alembic upgrade head --sql``): offline they write
the same DDL without reading the catalog, which is why ``primary_key`` is an argument (online
it is checked against the table; offline it is needed, with SQL types for a side table, e.g.
``primary_key={"id": "bigint"}``), and the schema is ``public`` unless ``schema=`` names one.
Each operation has a ``reverse()`` (autogenerate-style downgrades write themselves), renders in
autogenerate, and has a typed function twin (``simsql.alembic.add_simhash(op, ...)``).
A table that already has a column named ``simhash`` is attached under another prefix
(``op.add_simhash(..., prefix="fp")``: columns ``fp``, ``fp_src``, ``fp_b0``..), given to the
index operations and carried by every ``reverse()``; online the downgrade reads it from the
registry, offline it must be in the arguments like ``primary_key``.

Autogenerate: tables your models declare (``SimHashMixin``, the side table of
``simsql.attach``) come out of ``alembic revision --autogenerate`` with their columns and
indexes, like any table, and with ``op.create_simhash_trigger(table, source)``: the trigger
``create_all`` installs through the table's DDL events, which Alembic's own comparison cannot
see. Without it, a database built by migrations would keep fingerprints of text that raw SQL
changed. The comparator emits it for a new table, and for an existing one that lacks the
trigger (a model that just gained the mixin); its reverse drops trigger and function. Both
work offline. It is registered when this module is imported, which simsql does itself when a
model is mapped in a process that has imported Alembic (the ``alembic`` command runs ``env.py``
after importing Alembic, so ``env.py`` needs nothing); a program that imports its models before
Alembic and runs autogenerate through Alembic's API imports ``simsql.alembic`` itself.

The package is drawn the way Alembic draws its own operations: :mod:`.ops` (what each operation
carries, ``op.add_simhash`` and the typed twins, ``reverse()``), :mod:`.toimpl` (running them,
online or offline), :mod:`.render` and :mod:`.compare` (autogenerate), :mod:`.own` (simsql's own objects, which
autogenerate leaves out of an application's revisions), and :mod:`.revisions` (simsql's own
revisions in its own version table: :func:`upgrade`, :func:`downgrade`, :func:`current`,
:func:`history`, and :func:`install`, which ``simsql attach`` and ``attach_table`` call). Importing the package imports all of them, which is what
registers the operations, their implementations, renderers and comparators with Alembic.
"""

from __future__ import annotations

from . import compare, own, render, toimpl
from .ops import (
    AddSimhashListsOp,
    AddSimHashOp,
    AddVectorIndexOp,
    CreateSimHashIndexesOp,
    CreateSimHashTriggerOp,
    DowngradeSimsqlOp,
    DropSimHashIndexesOp,
    DropSimhashListsOp,
    DropSimHashOp,
    DropSimHashTriggerOp,
    DropVectorIndexOp,
    PrimaryKey,
    UpgradeSimsqlOp,
    add_simhash,
    add_simhash_lists,
    add_vector_index,
    create_simhash_indexes,
    downgrade_simsql,
    drop_simhash,
    drop_simhash_indexes,
    drop_simhash_lists,
    drop_vector_index,
    upgrade_simsql,
)
from .revisions import BRANCH, config, current, downgrade, history, install, script_location, upgrade, versions_path
from .toimpl import OFFLINE_SCHEMA

__all__ = [
    "BRANCH",
    "OFFLINE_SCHEMA",
    "AddSimhashListsOp",
    "AddSimHashOp",
    "AddVectorIndexOp",
    "CreateSimHashIndexesOp",
    "CreateSimHashTriggerOp",
    "DowngradeSimsqlOp",
    "DropSimhashListsOp",
    "DropSimHashIndexesOp",
    "DropSimHashOp",
    "DropSimHashTriggerOp",
    "DropVectorIndexOp",
    "PrimaryKey",
    "UpgradeSimsqlOp",
    "add_simhash_lists",
    "add_simhash",
    "add_vector_index",
    "compare",
    "config",
    "create_simhash_indexes",
    "current",
    "downgrade",
    "downgrade_simsql",
    "drop_simhash_lists",
    "drop_simhash",
    "drop_simhash_indexes",
    "drop_vector_index",
    "history",
    "install",
    "own",
    "render",
    "script_location",
    "toimpl",
    "upgrade",
    "upgrade_simsql",
    "versions_path",
]
