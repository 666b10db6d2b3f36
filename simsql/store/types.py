"""``SimHash``: a SQLAlchemy column type for 64-bit fingerprints.

Python sees unsigned ints in ``[0, 2**64)``. PostgreSQL stores the same bits as a signed
``bigint`` (two's complement, see :func:`simsql.text.bits.to_signed`), which preserves XOR and so every
distance; MySQL and MariaDB store them as they are, in a ``BIGINT UNSIGNED``. The comparator adds the vocabulary of the math, as pgvector-python does::

    select(Article).order_by(Article.simhash.hamming_distance(fp))
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Float, literal
from sqlalchemy.sql import ColumnElement
from sqlalchemy.types import TypeDecorator

from ..dialects import hamming_expression, type_rules, variant_type
from ..text.bits import check_fingerprint


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

    # The column type and the mapping of the 64 bits are the backend's
    # (:attr:`simsql.dialects.Backend.fingerprint_type`); any other dialect gets the portable
    # signed BIGINT, so a statement still prints without a server.

    def load_dialect_impl(self, dialect: Any) -> Any:
        return dialect.type_descriptor(type_rules(dialect).fingerprint_type)

    def process_bind_param(self, value: int | None, dialect: Any) -> int | None:
        if value is None:
            return None
        return type_rules(dialect).fingerprint_to_db(check_fingerprint(value))

    def process_result_value(self, value: int | None, dialect: Any) -> int | None:
        if value is None:
            return None
        return type_rules(dialect).fingerprint_from_db(value)


def _as_fingerprint(other: int | ColumnElement[Any]) -> ColumnElement[Any]:
    if isinstance(other, ColumnElement):
        return other
    return literal(check_fingerprint(other), SimHash())


TEXT_DIGEST = variant_type("digest_type")
"""The md5 of a row's text (``<prefix>_src``), in each backend's
:attr:`~simsql.dialects.Backend.digest_type`: ``uuid`` on PostgreSQL; 32 hex digits on
MySQL/MariaDB, where ``MD5()`` yields exactly that and MariaDB's own UUID type refuses md5
values whose variant bits are not RFC 4122's ("Incorrect uuid value")."""
