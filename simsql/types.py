"""``SimHash``: a SQLAlchemy column type for 64-bit fingerprints.

Python sees unsigned ints in ``[0, 2**64)``. PostgreSQL stores the same bits as a signed
``bigint`` (two's complement, see :func:`simsql.to_signed`), which preserves XOR and so every
distance; MySQL and MariaDB store them as they are, in a ``BIGINT UNSIGNED``. The comparator adds the vocabulary of the math, as pgvector-python does::

    select(Article).order_by(Article.simhash.hamming_distance(fp))
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Float, Uuid, literal
from sqlalchemy.dialects import mysql
from sqlalchemy.sql import ColumnElement
from sqlalchemy.types import TypeDecorator

from .bits import check_fingerprint, to_signed, to_unsigned
from .dialects import hamming_expression, is_mysql


class SimHash(TypeDecorator[int]):
    """A 64-bit SimHash fingerprint: ``bigint`` on PostgreSQL, ``BIGINT UNSIGNED`` on MySQL/MariaDB."""

    impl = BigInteger
    cache_ok = True

    def __init__(self) -> None:
        super().__init__()
        # Alembic autogenerate renders a type as ``<instance.__module__>.<repr>``. A migration
        # only needs the database type, so render the bigint this is (``sa.BigInteger()``):
        # generated files then need no import of simsql and cannot fail with a NameError.
        self.__dict__["__module__"] = "sa"

    def __repr__(self) -> str:
        return "BigInteger()"

    class comparator_factory(BigInteger.Comparator[int]):  # noqa: N801 - SQLAlchemy's name
        def hamming_distance(self, other: int | ColumnElement[Any]) -> ColumnElement[int]:
            """Number of differing bits (0..64); NULL when either side is NULL."""
            return hamming_expression(self.expr, _as_fingerprint(other))

        def similarity(self, other: int | ColumnElement[Any]) -> ColumnElement[float]:
            """``1 - hamming_distance / 64``."""
            distance = hamming_expression(self.expr, _as_fingerprint(other))
            return (literal(1.0, Float()) - distance / literal(64.0, Float())).label(None)  # type: ignore[return-value]

    def load_dialect_impl(self, dialect: Any) -> Any:
        if is_mysql(dialect):
            return dialect.type_descriptor(mysql.BIGINT(unsigned=True))
        return dialect.type_descriptor(BigInteger())

    def process_bind_param(self, value: int | None, dialect: Any) -> int | None:
        if value is None:
            return None
        value = check_fingerprint(value)
        return value if is_mysql(dialect) else to_signed(value)

    def process_result_value(self, value: int | None, dialect: Any) -> int | None:
        if value is None:
            return None
        return int(value) if is_mysql(dialect) else to_unsigned(value)


def _as_fingerprint(other: int | ColumnElement[Any]) -> ColumnElement[Any]:
    if isinstance(other, ColumnElement):
        return other
    return literal(check_fingerprint(other), SimHash())


TEXT_DIGEST = Uuid().with_variant(Uuid(native_uuid=False), "mysql", "mariadb")
"""The md5 of a row's text (``<prefix>_src``): ``uuid`` on PostgreSQL; 32 hex digits on
MySQL/MariaDB, where ``MD5()`` yields exactly that and MariaDB's own UUID type refuses md5
values whose variant bits are not RFC 4122's ("Incorrect uuid value")."""
