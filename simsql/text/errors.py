"""Exceptions raised by simsql.

Every error a caller can reasonably handle has its own class, so application code can tell
"this text has nothing to fingerprint" apart from "this database cannot run simsql" without
parsing messages. All of them derive from :class:`SimsqlError`.
"""

from __future__ import annotations


class SimsqlError(Exception):
    """Base class of every error simsql raises on purpose."""


class EmptyDocument(SimsqlError, ValueError):
    """The text yields no features (empty, whitespace, punctuation or emoji only).

    simsql never invents a fingerprint for such text: a constant fingerprint would sit at
    distance 0 from every other empty document and make them all "duplicates". The database
    layer stores NULL instead, and NULL never matches anything.
    """


class TextTooLarge(SimsqlError, ValueError):
    """A text over the size a check accepts (``find_original``'s ``max_bytes``), refused before
    any work: the cost of fingerprinting and shingling grows with the text."""


class UnsupportedDatabase(SimsqlError):
    """The connected database cannot run simsql (wrong backend or PostgreSQL older than 14)."""


class ConfigMismatch(SimsqlError):
    """Fingerprints stored with one :class:`~simsql.Fingerprinter` config queried with another.

    Fingerprints from different configurations are not comparable; mixing them gives silently
    wrong neighbours, so simsql refuses instead.
    """


class NotAttached(SimsqlError, LookupError):
    """A model or table was used with simsql before simsql was attached to it."""


class SchemaError(SimsqlError, LookupError):
    """A table or column named by the caller does not exist, or is not usable as text."""


class LockTimeout(SimsqlError, TimeoutError):
    """A statement on a user's table waited longer than its bound (lock or statement timeout).

    The message names what it waited for (the blocking sessions, when PostgreSQL can tell) and
    what state it left: simsql bounds every statement it runs on a user's table so that a long
    transaction elsewhere makes it fail fast instead of queueing every other query behind it.
    """


class WouldLockTable(SchemaError):
    """The server cannot make a change online: it would copy the table, or lock out its
    writers, while it runs (MySQL/MariaDB refused ``ALGORITHM=INSTANT`` and
    ``ALGORITHM=INPLACE, LOCK=NONE``, e.g. on a table with a FULLTEXT index).

    simsql refuses rather than block a live table for the length of a copy; the message gives
    the server's reason and says what was left as it was. Side-table mode does not alter the
    user's table at all.
    """


class MissingDependency(SimsqlError, ImportError):
    """What was asked for needs a package this installation does not have: a database driver
    named in a URL, or a part of simsql installed as an extra (``simsql[embedded]``,
    ``simsql[jieba]``, ``simsql[sqlmodel]``). The message names the package and the ``pip
    install`` that adds it. An :class:`ImportError`, so code that guards an optional import
    with ``except ImportError`` keeps working."""
