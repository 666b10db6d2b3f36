"""Autogenerate renderers: each operation of :mod:`.ops` written as the line a user would type
into a migration (``op.add_simhash('articles', ['title'])``), with ``import simsql.alembic``
added to the file's imports so the rendered migration runs as it is.

Importing this module registers the renderers (``renderers.dispatch_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alembic.autogenerate import renderers
from alembic.autogenerate.api import AutogenContext

from ..schema.names import DEFAULT_PREFIX
from ..text.fingerprint import DEFAULT, DEFAULT_WIDE
from ..text.vectors import VectorFingerprinter
from .ops import (
    AddSimHashOp,
    AttachmentOp,
    CreateSimHashIndexesOp,
    CreateSimHashTriggerOp,
    DowngradeSimsqlOp,
    DropSimHashIndexesOp,
    DropSimHashOp,
    DropSimHashTriggerOp,
    IndexesOp,
    PrimaryKey,
    TriggerOp,
    UpgradeSimsqlOp,
    key_names,
)

#: The import every rendered simsql operation needs (it registers the operations on ``op``).
IMPORT = "import simsql.alembic"


def _keywords(**values: Any) -> str:
    return "".join(f", {name}={value!r}" for name, value in values.items() if value)


def _custom(prefix: str) -> str | None:
    return None if prefix == DEFAULT_PREFIX else prefix


def _plain(primary_key: PrimaryKey) -> Any:
    """The primary key as the literal a user would write (a list, or a dict with types)."""
    if not primary_key:
        return None
    return dict(primary_key) if isinstance(primary_key, Mapping) else list(key_names(primary_key))


@renderers.dispatch_for(AddSimHashOp)
@renderers.dispatch_for(DropSimHashOp)
def _render_attachment(context: AutogenContext, operation: AttachmentOp) -> str:
    context.imports.add(IMPORT)
    if isinstance(operation, AddSimHashOp):
        call = f"op.add_simhash({operation.table_name!r}, {list(operation.source)!r}"
    else:
        call = f"op.drop_simhash({operation.table_name!r}" + _keywords(source=list(operation.source))
    call += _keywords(schema=operation.schema, side_table=operation.side_table, primary_key=_plain(operation.primary_key),
                      prefix=_custom(operation.prefix))  # fmt: skip
    configuration = operation.configuration
    if isinstance(configuration, VectorFingerprinter):
        context.imports.add("import simsql")
        call += f", fingerprinter=simsql.VectorFingerprinter.from_settings({configuration.settings!r})"
        call += ", wide=True" if operation.wide else ""  # a vector configuration does not say it
    elif configuration.config_id not in (DEFAULT.config_id, DEFAULT_WIDE.config_id):
        context.imports.add("import simsql")
        call += f", fingerprinter=simsql.Fingerprinter(**{configuration.settings!r})"
    elif configuration.wide:  # the operations' default is version 2, as SimHashMixin's
        call += ", wide=True"
    call += _keywords(wide_blocks=operation.wide_blocks)
    return call + ")"


@renderers.dispatch_for(CreateSimHashIndexesOp)
@renderers.dispatch_for(DropSimHashIndexesOp)
def _render_indexes(context: AutogenContext, operation: IndexesOp) -> str:
    context.imports.add(IMPORT)
    name = "create_simhash_indexes" if isinstance(operation, CreateSimHashIndexesOp) else "drop_simhash_indexes"
    extra = _keywords(schema=operation.schema, concurrently=operation.concurrently, side_table=operation.side_table,
                      primary_key=_plain(operation.primary_key), prefix=_custom(operation.prefix))  # fmt: skip
    extra += ", wide=True" if operation.wide else ""
    extra += _keywords(wide_blocks=operation.wide_blocks)
    return f"op.{name}({operation.table_name!r}{extra})"


@renderers.dispatch_for(CreateSimHashTriggerOp)
@renderers.dispatch_for(DropSimHashTriggerOp)
def _render_trigger(context: AutogenContext, operation: TriggerOp) -> str:
    context.imports.add(IMPORT)
    name = "create_simhash_trigger" if isinstance(operation, CreateSimHashTriggerOp) else "drop_simhash_trigger"
    extra = _keywords(schema=operation.schema, side_table=operation.side_table,
                      primary_key=list(operation.primary_key) if operation.side_table else None,
                      prefix=_custom(operation.prefix), wide=operation.wide)  # fmt: skip
    return f"op.{name}({operation.table_name!r}, {list(operation.source)!r}{extra})"


@renderers.dispatch_for(UpgradeSimsqlOp)
@renderers.dispatch_for(DowngradeSimsqlOp)
def _render_own(context: AutogenContext, operation: UpgradeSimsqlOp | DowngradeSimsqlOp) -> str:
    context.imports.add(IMPORT)
    if isinstance(operation, UpgradeSimsqlOp):
        return "op.upgrade_simsql()" if operation.revision == "heads" else f"op.upgrade_simsql({operation.revision!r})"
    return "op.downgrade_simsql()" if operation.revision == "base" else f"op.downgrade_simsql({operation.revision!r})"
