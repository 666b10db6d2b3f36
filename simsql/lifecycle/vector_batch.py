"""One backfill batch of a vector column: signed by one matrix product, each signature kept with
the server's own digest of the vector it was computed from.

A vector has no text, so the digest a batch stores is not computed here: the batch reads it from
the server beside the vector (the expression the table's trigger compares, see
:class:`simsql.dialects.batch.BatchSQL`), so a writer that changes a vector while the batch is
signed makes the trigger drop the signature, as for text.

A bad vector (wrong length, NaN or infinity, all zeros, not numbers) **stops the backfill** with
an error naming the keys of the batch's bad rows and why each is bad; nothing of that batch is
written, every batch before it is kept, and a rerun after the rows are fixed (or set to NULL,
which a backfill leaves unsigned) resumes. Not a NULL signature counted on the side: the ORM
refuses the same vector at flush, and a row silently left unsigned is a row ``most_similar``
never returns, found only by someone who reads a counter. A broken embedding pipeline is
better found at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from ..dialects.batch import Job
from ..text.vectors import VectorFingerprinter, vector_of

SHOWN = 10
"""Bad rows a refusal names (a batch may hold more)."""


def server_digest(value: Any) -> uuid.UUID:
    """A digest as the server returns it (``uuid`` on PostgreSQL, 32 hex digits on MySQL)."""
    if isinstance(value, uuid.UUID):
        return value
    return uuid.UUID(hex=value.decode() if isinstance(value, (bytes, bytearray)) else str(value))


def sign_rows(job: Job, keys: Sequence[Sequence[Any]], rows: Sequence[Sequence[Any]]) -> tuple[list[uuid.UUID | None], Future[Any]]:
    """(digests, signatures) of ``rows`` (each: the keys, the vector, its digest): the
    signatures as a finished :class:`Future` (one tuple of words per row: the 64-bit signature,
    or on a wide table its four words), whose ``result()`` raises the refusal of a bad vector,
    so that the batches read before it are written first."""
    n = len(keys[0]) if keys else 0
    # every row read holds a value (SQL NULL is never read): each gets the server's digest
    digests: list[uuid.UUID | None] = [server_digest(r[n + 1]) for r in rows]
    signed: Future[Any] = Future()
    try:
        signed.set_result(signatures(job, keys, [r[n] for r in rows]))
    except (TypeError, ValueError) as error:
        signed.set_exception(error)
    return digests, signed


def signatures(job: Job, keys: Sequence[Sequence[Any]], values: Sequence[Any]) -> list[tuple[int, ...] | None]:
    """One tuple of words per value (None for a NULL vector); a bad vector refuses the batch."""
    fingerprinter = job.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    what = f"{job.table}.{job.source[0]}"
    # JSON's null (SQLAlchemy's JSON type stores Python None so) is no vector, as SQL NULL is: no
    # signature, and the digest marks the row done while it stays null ("no text" in status)
    decoded = [None if v is None else _decoded(v, what) for v in values]
    present = [i for i, v in enumerate(decoded) if v is not None]
    if not present:
        return [None] * len(values)
    try:
        batch = fingerprinter.check(np.stack([np.asarray(decoded[i], dtype=np.float64) for i in present]))
    except (TypeError, ValueError):
        raise _refusal(job, [keys[i] for i in present], [decoded[i] for i in present]) from None
    if job.names.wide:
        computed: list[tuple[int, ...]] = [s.words for s in fingerprinter.signatures_many(batch)]
    else:
        computed = [(int(f),) for f in fingerprinter.fingerprint_array(batch)]
    out: list[tuple[int, ...] | None] = [None] * len(values)
    for i, words in zip(present, computed):
        out[i] = words
    return out


def _decoded(value: Any, what: str) -> Any:
    """A stored value as a vector (:func:`simsql.text.vectors.vector_of`), or the error saying why
    it is none (kept for :func:`_refusal`, which names the row)."""
    try:
        return vector_of(value, what)
    except (TypeError, ValueError) as error:
        return error


def _refusal(job: Job, keys: Sequence[Sequence[Any]], values: Sequence[Any]) -> Exception:
    """The error naming the bad rows of a batch (the kind of the first one's)."""
    fingerprinter = job.fingerprinter
    assert isinstance(fingerprinter, VectorFingerprinter)
    bad: list[tuple[Sequence[Any], Exception]] = []
    for key, value in zip(keys, values):
        try:
            if isinstance(value, Exception):
                raise value
            fingerprinter.check(value)
        except (TypeError, ValueError) as error:
            bad.append((key, error))
    if not bad:  # each vector passes alone: they differ in length (a ragged batch)
        bad = [(keys[0], ValueError("the batch's vectors differ in length"))]
    shown = "; ".join(f"key {list(key)}: {str(error).removeprefix('vector 0 ')}" for key, error in bad[:SHOWN])
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    return type(bad[0][1])(
        f"backfill of {job.schema}.{job.table} stopped at {len(bad)} bad vector(s) in {job.source[0]}: {shown}{more}. "
        "Nothing of this batch was written and every batch before it is kept: fix these rows (or set them to "
        "NULL, which stays unsigned), then run the backfill again to resume."
    )
