"""simsql: SimHash near-duplicate detection and "most similar" queries inside PostgreSQL."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

from . import registry
from .background import Background
from .bits import blocks, cosine_estimate, hamming, similarity, to_signed, to_unsigned
from .errors import (
    ConfigMismatch,
    EmptyDocument,
    LockTimeout,
    NotAttached,
    SchemaError,
    SimsqlError,
    TextTooLarge,
    UnsupportedDatabase,
    WouldLockTable,
)
from .fingerprint import Fingerprinter, simhash, simhash_features
from .vectors import VectorFingerprinter
from .queries import (
    DuplicatePair,
    Match,
    duplicate_groups,
    find_original,
    most_similar,
    most_similar_many,
    most_similar_vectors,
    near_copy_vectors,
    near_duplicates,
    similar_to,
    VectorMatch,
)
from .orm_triggers import on_trigger_table
from .side_tables import attach_model
from .storage import Binding, SimHashMixin, WideSimHashMixin, binding_for
from .lifecycle.backfill import BackfillResult, backfill
from .lifecycle.catalog import reflect
from .lifecycle.refingerprint import RefingerprintResult, refingerprint
from .lifecycle.sampling import fit_background
from .lifecycle.tables import TableStatus, attach_table, detach_table, status
from .types import SimHash
from .weighting import IdfTable

__all__ = [
    "Background",
    "BackfillResult",
    "backfill",
    "Binding",
    "DuplicatePair",
    "Match",
    "SimHash",
    "SimHashMixin",
    "WideSimHashMixin",
    "attach_model",
    "attach_table",
    "detach_table",
    "status",
    "TableStatus",
    "LockTimeout",
    "binding_for",
    "duplicate_groups",
    "find_original",
    "fit_background",
    "most_similar",
    "most_similar_many",
    "most_similar_vectors",
    "near_copy_vectors",
    "near_duplicates",
    "reflect",
    "refingerprint",
    "RefingerprintResult",
    "similar_to",
    "ConfigMismatch",
    "EmptyDocument",
    "TextTooLarge",
    "Fingerprinter",
    "VectorFingerprinter",
    "VectorMatch",
    "IdfTable",
    "NotAttached",
    "SchemaError",
    "SimsqlError",
    "UnsupportedDatabase",
    "WouldLockTable",
    "blocks",
    "cosine_estimate",
    "hamming",
    "similarity",
    "simhash",
    "simhash_features",
    "to_signed",
    "to_unsigned",
]

__version__ = "0.3.0"



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

DEPRECATED_NAMES = {"attach": "attach_model", "detach": "detach_table"}
"""Names of simsql 0.2 and the functions that replace them. ``simsql.attach`` (an ORM model's
side table) read too much like ``simsql.attach_table`` (a live table); ``simsql.detach`` undoes
the latter. The old names keep working, with a ``DeprecationWarning``, until simsql 0.4."""


def __getattr__(name: str) -> Any:
    """The deprecated names of :data:`DEPRECATED_NAMES`, with a warning (PEP 562)."""
    if name in DEPRECATED_NAMES:
        replacement = DEPRECATED_NAMES[name]
        warnings.warn(
            f"simsql.{name} is deprecated and will be removed in simsql 0.4; use simsql.{replacement}",
            DeprecationWarning,
            stacklevel=2,
        )
        return globals()[replacement]
    raise AttributeError(f"module 'simsql' has no attribute {name!r}")
