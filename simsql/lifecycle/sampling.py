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
from ..text.fingerprint import DEFAULT, Fingerprinter
from .catalog import reflect

DEFAULT_SAMPLE = 5000
"""Texts read to fit a background: centres are medians, already stable to about 1/70 of their
spread at this size, while reading stays a few seconds on any table."""


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
    wide: bool = False,
) -> Background:
    """A :class:`Background` for ``fingerprinter`` (today's default if omitted), fitted on a
    random sample of ``table``'s text. Use it as ``Fingerprinter(background=...)`` and move the
    table over with :func:`simsql.refingerprint`.

    ``wide=True``: centre the whole 256-bit wide signature (:meth:`Background.fit`), for a table
    with the wide signature whose originality check must stay cheap as it grows: its block
    indexes are cut mostly from words 1-3, whose leaning bits crowd the buckets a fresh text's
    probes read. Off by default, because balanced words 1-3 make whole-table deduplication reach
    fewer edited copies at the same ``probe_radius`` (BENCHMARKS.md, "A wide background").

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
    else:
        texts = sample_texts(bind, table, schema=schema, sample=sample)
    try:
        return Background.fit(texts, base, wide=wide)
    except ValueError as error:
        where = f"{schema}.{table}" if schema else table
        raise ValueError(f"{where} holds {len(texts)} texts in a sample of {sample}: {error}") from None
