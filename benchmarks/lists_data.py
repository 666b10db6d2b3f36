"""The data of :mod:`benchmarks.lists` (issue 34): real-text vectors and fingerprints, held-out
queries and their exact top-10, cached in ``benchmarks/.cache``.

- **Vectors**: the embeddings of :mod:`benchmarks.vectors` (TF-IDF + SVD(256) of English man-page
  paragraphs, unit rows), the first ``queries`` paragraphs held out as queries, the stored rows
  grown past the ~60k real ones by *turned* rows (:func:`benchmarks.vectors.grow`): the same
  construction, seeds and order as ``python -m benchmarks.vectors --rows N``. Truth: the exact
  cosine top-10 of each query (float32 products in numpy, ids ``1..rows``), highest first.
- **Fingerprints**: the articles of :mod:`benchmarks.scale` (real man-page paragraphs, English and
  Chinese, planted variants and series; the set ``benchmarks.exact_scan`` loads, same seed) and
  ``queries`` new articles of random paragraphs from the same pools, never stored (the "top-10
  spread" target: an article with no near copy, the common case). Truth: the exact Hamming
  top-10 over all rows, ties broken by key, and each query's 10th distance (recall counts a found
  row whose distance is within it, :func:`benchmarks.timing.topk_recall`'s rule).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import CACHE_DIR
from .hamming import distances

TOP = 10
DIMENSIONS = 256


@dataclass
class VectorSet:
    vectors: np.ndarray  # float32 (rows, d), unit rows; row i has id i + 1
    queries: np.ndarray  # float32 (queries, d), unit rows, never stored
    truth: np.ndarray  # int64 (queries, TOP): ids of the exact cosine top-10, nearest first
    real_rows: int  # rows that are real paragraphs (the rest are turned)
    seconds: float  # to build (0 when read from the cache)


@dataclass
class TextSet:
    fingerprints: np.ndarray  # uint64 (rows,); row i has id i + 1
    members: np.ndarray  # int32 (rows, 16): paragraph ids of each article (-1 padded)
    queries: np.ndarray  # uint64 (queries,), never stored
    query_members: np.ndarray  # int32 (queries, 16)
    truth: np.ndarray  # int64 (queries, TOP): ids of the exact Hamming top-10, ties by key
    tenth: np.ndarray  # int64 (queries,): distance of the 10th
    paragraphs: list[str]  # what ``members`` index: an article's text is its paragraphs joined
    seconds: float


def _cache(name: str) -> Path:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    return CACHE_DIR / name


def cosine_truth(vectors: np.ndarray, queries: np.ndarray, top: int = TOP) -> np.ndarray:
    """Ids (1-based) of each query's ``top`` highest cosines, highest first (unit rows)."""
    out = np.empty((len(queries), top), dtype=np.int64)
    for lo in range(0, len(queries), 50):
        scores = vectors @ queries[lo : lo + 50].T  # (rows, 50)
        for j in range(scores.shape[1]):
            column = scores[:, j]
            chosen = np.argpartition(-column, top)[:top]
            out[lo + j] = chosen[np.argsort(-column[chosen], kind="stable")] + 1
    return out


def hamming_truth(fingerprints: np.ndarray, queries: np.ndarray, top: int = TOP) -> tuple[np.ndarray, np.ndarray]:
    """Ids (1-based) of each query's ``top`` nearest by Hamming distance, ties by key, and the
    distance of the ``top``-th."""
    ids = np.empty((len(queries), top), dtype=np.int64)
    tenth = np.empty(len(queries), dtype=np.int64)
    for i, q in enumerate(queries):
        d = distances(fingerprints, int(q)).astype(np.int64)
        kth = int(np.partition(d, top - 1)[top - 1])
        within = np.flatnonzero(d <= kth)  # ascending keys
        ids[i] = within[np.lexsort((within, d[within]))][:top] + 1
        tenth[i] = kth
    return ids, tenth


def vector_set(rows: int, queries: int) -> VectorSet:
    """:class:`VectorSet` of ``rows`` stored vectors and ``queries`` held out (cached)."""
    path = _cache(f"partitions-vectors-{rows}-{queries}.npz")
    if path.exists():
        saved = np.load(path)
        return VectorSet(saved["vectors"], saved["queries"], saved["truth"], int(saved["real_rows"]), 0.0)
    from .vectors import embed, grow, texts

    started = time.perf_counter()
    corpus = texts(rows + queries)
    embedded = embed(corpus, DIMENSIONS)
    held, vectors = embedded[:queries], grow(embedded[queries:], rows)
    truth = cosine_truth(vectors, held)
    real_rows = min(rows, len(embedded) - queries)
    partial = path.with_suffix(".tmp.npz")
    np.savez(partial, vectors=vectors, queries=held, truth=truth, real_rows=real_rows)
    partial.replace(path)
    return VectorSet(vectors, held, truth, real_rows, time.perf_counter() - started)


def text_set(rows: int, queries: int, source: str = "manpages", documents: int | None = None) -> TextSet:
    """:class:`TextSet` of ``rows`` stored articles (:func:`benchmarks.scale.build_cached`, seed
    ``rows`` as in ``benchmarks.exact_scan``) and ``queries`` new ones (cached), their
    paragraphs from ``source`` (:data:`benchmarks.scale.TEXT_SOURCES`: ``heldout`` is Debian's
    manuals, never tuned on); ``documents``: from the first that many documents of each
    language only (a smoke run: the corpus's prefix renders in seconds, the whole of it in
    minutes), every document by default."""
    from . import scale

    real = scale.real_text("default", limit=documents, source=source)
    started = time.perf_counter()
    data = scale.build_cached(real, rows, seed=rows)
    prefix = "" if documents is None else f"-d{documents}"
    path = _cache(f"partitions-text{scale.corpus_key(real)}{prefix}-{rows}-{queries}.npz")
    if path.exists():
        saved = np.load(path)
        return TextSet(
            data.fingerprints, data.members, saved["queries"], saved["query_members"], saved["truth"], saved["tenth"], real.paragraphs, 0.0
        )
    rng = np.random.default_rng(rows + 34)
    members = scale.random_articles(rng, queries, len(real.paragraphs), real.pools)
    held = scale.fingerprints_of(members, real.features, real.fingerprinter)
    truth, tenth = hamming_truth(data.fingerprints, held)
    partial = path.with_suffix(".tmp.npz")
    np.savez(partial, queries=held, query_members=members, truth=truth, tenth=tenth)
    partial.replace(path)
    return TextSet(data.fingerprints, data.members, held, members, truth, tenth, real.paragraphs, time.perf_counter() - started)
