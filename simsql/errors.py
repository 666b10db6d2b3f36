"""Every exception simsql raises, all derived from :class:`SimsqlError`.

The public home of these names (a promise kept across releases); the classes are defined in
:mod:`simsql.text.errors`, the lowest layer, so that every layer can raise them.
"""

from __future__ import annotations

from .text.errors import (
    ConfigMismatch,
    EmptyDocument,
    LockTimeout,
    MissingDependency,
    NotAttached,
    SchemaError,
    SimsqlError,
    TextTooLarge,
    UnsupportedDatabase,
    WouldLockTable,
)

__all__ = [
    "ConfigMismatch",
    "EmptyDocument",
    "LockTimeout",
    "MissingDependency",
    "NotAttached",
    "SchemaError",
    "SimsqlError",
    "TextTooLarge",
    "UnsupportedDatabase",
    "WouldLockTable",
]
