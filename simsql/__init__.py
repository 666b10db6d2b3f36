"""simsql: SimHash near-duplicate detection and "most similar" queries inside PostgreSQL, MySQL
and MariaDB.

The names below are what an application needs on day one: the mixins and ``attach_model`` that
store fingerprints, the two fingerprinters, the queries and the rows they return, the operations
on a live table and the errors raised by the text a user submits. Everything else public lives
in the module it belongs to (docs/api.md lists them): the bit helpers in :mod:`simsql.text.bits`,
every exception in :mod:`simsql.text.errors`, ``simhash`` in :mod:`simsql.text.fingerprint`, the
integrations in their own packages (:mod:`simsql.alembic`, :mod:`simsql.asyncio`,
:mod:`simsql.django`, :mod:`simsql.sqlmodel`, :mod:`simsql.lifecycle.distribute`).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

from .lifecycle.backfill import BackfillResult, backfill
from .lifecycle.catalog import reflect
from .lifecycle.tables import TableStatus, attach_table, detach_table, status
from .queries import (
    DuplicatePair,
    Match,
    VectorMatch,
    duplicate_groups,
    find_original,
    most_similar,
    most_similar_vectors,
    near_copy_vectors,
    near_duplicates,
    similar_to,
)
from .store import registry
from .store.orm_triggers import on_trigger_table
from .store.side_tables import attach_model
from .store.storage import SimHashMixin, WideSimHashMixin
from .text.errors import EmptyDocument, SimsqlError, TextTooLarge
from .text.fingerprint import Fingerprinter
from .text.vectors import VectorFingerprinter

__all__ = [
    "BackfillResult",
    "DuplicatePair",
    "EmptyDocument",
    "Fingerprinter",
    "Match",
    "SimHashMixin",
    "SimsqlError",
    "TableStatus",
    "TextTooLarge",
    "VectorFingerprinter",
    "VectorMatch",
    "WideSimHashMixin",
    "attach_model",
    "attach_table",
    "backfill",
    "detach_table",
    "duplicate_groups",
    "find_original",
    "most_similar",
    "most_similar_vectors",
    "near_copy_vectors",
    "near_duplicates",
    "reflect",
    "similar_to",
    "status",
]

__version__ = "0.4.0.dev0"


def _load_alembic_integration(table: object) -> None:
    """A model with simsql's trigger declared while Alembic runs (``env.py`` importing the
    application's models): load ``simsql.alembic`` so autogenerate compares the trigger too, with
    nothing to add to ``env.py``. Outside Alembic nothing more is imported (Alembic is slow to import)."""
    if "alembic" in sys.modules:
        importlib.import_module("simsql.alembic")


on_trigger_table(_load_alembic_integration)


def _install(bind: Any) -> bool:
    """simsql's own objects installed when missing: :func:`simsql.alembic.install`, imported
    only when an attach or a mixin's ``create_all`` needs it (Alembic is slow to import)."""
    return bool(importlib.import_module("simsql.alembic").install(bind))


registry.install_with(_install)

DEPRECATED_NAMES = {
    "Background": "simsql.fingerprint.Background",
    "Binding": "simsql.store.Binding",
    "ConfigMismatch": "simsql.errors.ConfigMismatch",
    "IdfTable": "simsql.fingerprint.IdfTable",
    "LockTimeout": "simsql.errors.LockTimeout",
    "NotAttached": "simsql.errors.NotAttached",
    "RefingerprintResult": "simsql.lifecycle.RefingerprintResult",
    "SchemaError": "simsql.errors.SchemaError",
    "SimHash": "simsql.store.SimHash",
    "UnsupportedDatabase": "simsql.errors.UnsupportedDatabase",
    "WouldLockTable": "simsql.errors.WouldLockTable",
    "binding_for": "simsql.store.binding_for",
    "blocks": "simsql.bits.blocks",
    "cosine_estimate": "simsql.bits.cosine_estimate",
    "fit_background": "simsql.lifecycle.fit_background",
    "hamming": "simsql.bits.hamming",
    "most_similar_many": "simsql.queries.most_similar_many",
    "refingerprint": "simsql.lifecycle.refingerprint",
    "similarity": "simsql.bits.similarity",
    "simhash": "simsql.fingerprint.simhash",
    "simhash_features": "simsql.fingerprint.simhash_features",
    "to_signed": "simsql.bits.to_signed",
    "to_unsigned": "simsql.bits.to_unsigned",
}
"""The names simsql 0.3 exported at the top that live in their own module since 0.4, and where
(``simsql.hamming`` is ``simsql.text.bits.hamming``). They keep working, with a ``DeprecationWarning``
naming the new home, until simsql 0.5. (0.3's own renames, ``simsql.attach`` and
``simsql.detach``, were removed in 0.4 as announced.)"""


def __getattr__(name: str) -> Any:
    """The names of :data:`DEPRECATED_NAMES`, imported from their new home with a warning (PEP 562)."""
    if name in DEPRECATED_NAMES:
        module, _, attribute = DEPRECATED_NAMES[name].rpartition(".")
        warnings.warn(
            f"simsql.{name} is deprecated and will be removed in simsql 0.5; "
            f"use {module}.{attribute} (from {module} import {attribute})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'simsql' has no attribute {name!r}")
