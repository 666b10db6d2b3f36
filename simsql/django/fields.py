"""The column types of simsql's columns as Django fields.

Python sees what simsql's SQLAlchemy types give: a fingerprint (or signature word) is an
unsigned int in ``[0, 2**64)``, stored as the server stores it (PostgreSQL's signed ``bigint``
holds the same bits in two's complement, MySQL/MariaDB a ``BIGINT UNSIGNED``: the backend's
``fingerprint_to_db`` / ``fingerprint_from_db``, see :class:`simsql.SimHash`); the digest of the
text is a :class:`uuid.UUID` (``uuid`` on PostgreSQL, 32 hex digits on MySQL/MariaDB, which is
what ``MD5()`` returns there and what the table's trigger compares).
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import Any

from django.db import models
from django.db.models.expressions import BaseExpression
from django.utils.functional import cached_property

from ..dialects import type_rules
from ..text.bits import check_fingerprint
from .connection import dialect_for


def column_type(vendor: str, attribute: str) -> str:
    """The SQL type the backend of ``vendor`` gives the column ``attribute`` names
    (``fingerprint_type``, ``digest_type``), as SQLAlchemy compiles it there."""
    return str(getattr(type_rules(vendor), attribute).compile(dialect=dialect_for(vendor))).lower()


class SimHashField(models.BigIntegerField):
    """A 64-bit fingerprint (or a word of the wide signature): an unsigned int in Python."""

    description = "A 64-bit SimHash fingerprint"

    def db_type(self, connection: Any) -> str:
        return column_type(connection.vendor, "fingerprint_type")

    def rel_db_type(self, connection: Any) -> str:
        return self.db_type(connection)

    @cached_property
    def validators(self) -> list[Any]:
        return []  # the whole unsigned range is valid (BigIntegerField's bounds are signed)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        if value is None or isinstance(value, BaseExpression) or hasattr(value, "as_sql"):
            return value
        return type_rules(connection.vendor).fingerprint_to_db(check_fingerprint(value))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> int | None:
        if value is None:
            return None
        return int(type_rules(connection.vendor).fingerprint_from_db(int(value)))


class DigestField(models.UUIDField):
    """The md5 of the text a fingerprint was computed from (``<prefix>_src``)."""

    description = "md5 of a row's text"

    def db_type(self, connection: Any) -> str:
        return column_type(connection.vendor, "digest_type")

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        if not prepared:
            value = self.get_prep_value(value)
        processor = _digest_processor(connection.vendor)
        return processor(value) if processor is not None else value

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> uuid.UUID | None:
        if value is None or isinstance(value, uuid.UUID):
            return value
        return uuid.UUID(str(value))


@lru_cache(maxsize=None)
def _digest_processor(vendor: str) -> Any:
    """How SQLAlchemy binds a digest there (32 hex digits where the column is ``CHAR(32)``)."""
    dialect = dialect_for(vendor)
    return type_rules(vendor).digest_type.dialect_impl(dialect).bind_processor(dialect)


__all__ = ["DigestField", "SimHashField", "column_type"]
