"""simsql: SimHash near-duplicate detection and "most similar" queries inside PostgreSQL."""

from __future__ import annotations

from .background import Background
from .bits import blocks, cosine_estimate, hamming, similarity, to_signed, to_unsigned
from .errors import (
    ConfigMismatch,
    EmptyDocument,
    LockTimeout,
    NotAttached,
    SchemaError,
    SimsqlError,
    UnsupportedDatabase,
    WouldLockTable,
)
from .fingerprint import Fingerprinter, simhash, simhash_features
from .queries import (
    DuplicatePair,
    Match,
    duplicate_groups,
    find_original,
    most_similar,
    most_similar_many,
    near_duplicates,
    similar_to,
)
from .storage import Binding, SimHashMixin, attach, binding_for
from .lifecycle.backfill import BackfillResult, backfill
from .lifecycle.catalog import reflect
from .lifecycle.refingerprint import RefingerprintResult, refingerprint
from .lifecycle.sampling import fit_background
from .lifecycle.tables import TableStatus, attach_table, detach, status
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
    "attach",
    "attach_table",
    "detach",
    "status",
    "TableStatus",
    "LockTimeout",
    "binding_for",
    "duplicate_groups",
    "find_original",
    "fit_background",
    "most_similar",
    "most_similar_many",
    "near_duplicates",
    "reflect",
    "refingerprint",
    "RefingerprintResult",
    "similar_to",
    "ConfigMismatch",
    "EmptyDocument",
    "Fingerprinter",
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

__version__ = "0.2.0"
