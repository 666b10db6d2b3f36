"""A random sample of an attached table's text, and a :class:`~simsql.text.background.Background` fitted on it.

A background must describe the table it centres: the words *this* table repeats. Reading a
random sample of rows (not the first rows, which are often the oldest or one import batch) gives
that with a few thousand texts, whatever the table's size. The table's own recorded source
columns are read, joined exactly as fingerprints join them (:func:`simsql.store.storage.join_text`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, func, select

from ..store.storage import binding_for, join_text
from ..text.background import Background
from ..text.fingerprint import DEFAULT, WIDE_VERSION, Fingerprinter
from .catalog import reflect

DEFAULT_SAMPLE = 5000
"""Texts read to fit a background: centres are medians, already stable to about 1/70 of their
spread at this size, while reading stays a few seconds on any table."""


def table_is_wide(connection: Connection, table: str, schema: str | None = None) -> bool:
    """Whether the attached ``table`` stores the wide signature (raises NotAttached if unknown)."""
    return bool(binding_for(reflect(connection, table, schema)).words)


def sample_texts(connection: Connection, table: str, *, schema: str | None = None, sample: int = DEFAULT_SAMPLE) -> list[str]:
    """Up to ``sample`` texts of random rows of an attached table (rows without text skipped).

    ``ORDER BY random()`` reads the whole table once but holds only ``sample`` rows; identifiers
    come from the registry and the catalog, and are quoted by SQLAlchemy, never formatted in.
    """
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValueError(f"sample must be a positive int, got {sample!r}")
    model: Any = reflect(connection, table, schema)
    binding = binding_for(model)
    base = model.__table__
    columns = [base.c[name] for name in binding.source_columns]
    rows = connection.execute(select(*columns).order_by(func.random()).limit(sample)).all()
    return [text for text in (join_text(list(row)) for row in rows) if text is not None]


def fit_background(
    bind: Engine | Connection,
    table: str,
    *,
    fingerprinter: Fingerprinter | None = None,
    schema: str | None = None,
    sample: int = DEFAULT_SAMPLE,
    wide: bool | None = None,
) -> Background:
    """A :class:`Background` for ``fingerprinter`` (today's default if omitted), fitted on a
    random sample of ``table``'s text. Use it as ``Fingerprinter(background=...)`` and move the
    table over with :func:`simsql.refingerprint`.

    ``wide``: centre the whole 256-bit signature (:meth:`Background.fit`); None, the default,
    does so when the table has the wide signature or ``fingerprinter`` makes one (version 3), where the block indexes the originality check
    probes are cut mostly from words 1-3 (BENCHMARKS.md, "A wide background": on man pages it
    took the rows a fresh text's probes read from 548 to 58 of 50,000).

    Raises :class:`~simsql.text.errors.NotAttached` for a table simsql does not know, and
    ``ValueError`` when the table holds too little text to fit one (see
    :data:`simsql.text.background.MIN_DOCUMENTS`).
    """
    base = fingerprinter if fingerprinter is not None else DEFAULT
    if not isinstance(base, Fingerprinter):
        raise TypeError(f"fingerprinter must be a simsql.Fingerprinter, got {type(base).__name__}")
    if isinstance(bind, Engine):
        with bind.connect() as connection:
            texts = sample_texts(connection, table, schema=schema, sample=sample)
            wide = base.version == WIDE_VERSION or table_is_wide(connection, table, schema) if wide is None else wide
    else:
        texts = sample_texts(bind, table, schema=schema, sample=sample)
        wide = base.version == WIDE_VERSION or table_is_wide(bind, table, schema) if wide is None else wide
    try:
        return Background.fit(texts, base, wide=wide)
    except ValueError as error:
        where = f"{schema}.{table}" if schema else table
        raise ValueError(f"{where} holds {len(texts)} texts in a sample of {sample}: {error}") from None
