"""The originality benchmark's table at ten million rows, built from cached paragraph features.

    python -m benchmarks.scale10m --validate 2000 --rows 0                 # exactness check only, no database
    python -m benchmarks.scale10m --rows 20000 --schema bench_originality_10m_smoke --compare bench_originality
    python -m benchmarks.scale10m --rows 10000000 --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale \\
        --compare bench_originality --compare-rows 1000000 --results /work/logs/scale10m-build.json

then the checks, on the kept table::

    python -m benchmarks.originality --rows 10000000 --reuse --schema bench_originality_10m \\
        --parts recall,alarms,latency --scans 20 --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale

What it builds: exactly the table ``python -m benchmarks.originality --rows N`` loads (PostgreSQL
only): :class:`benchmarks.originality.Doc` rows, ids 1..200 the 200 real man pages of
:func:`benchmarks.originality.corpus` (``originals=200, fresh=1000, seed=22``), then ``N - 200``
filler articles, the very sequence :func:`benchmarks.originality.filler` yields (random runs of
real man-page paragraphs of the shared pool, :func:`benchmarks.corpus.assembled_articles`). Each
row holds its text, the digest of its text (``simhash_src``, so the row trigger keeps the
signature as current) and the 256-bit signature in ``simhash``, ``simhash_w1..w3``, written by
``COPY`` with the indexes dropped and built afterwards, then ``VACUUM ANALYZE``; so
``benchmarks.originality --reuse`` accepts it. It is as hard as real text because it *is* real
text: every stored row is real man-page prose, rows share whole paragraphs with one another (as
the rows of a real platform share quotations and boilerplate), and the fresh articles the check
is measured on come from the same pool. Harder, in one way: 10M articles of 9.5 paragraphs on
average drawn from 45,087 paragraphs store each paragraph about 2,100 times, far more reuse than
ten million distinct documents would have, so a submission built from the pool has thousands of
stored rows sharing a paragraph with it (near neighbours to tell apart, candidates to confirm).
Easier, in one: the vocabulary is man pages', not the web's.

How the signatures are made: computing them as ``load`` does (tokenise each article, hash its
features under four seeds, weigh them) costs 290-390 CPU-microseconds an article (290 measured by
``--validate``, 393 in the 1M load), 50-65 CPU-minutes for ten million. But an article is
``"\\n\\n".join`` of whole paragraphs, and no feature crosses a paragraph join (features are
single words, ``\\w+`` runs; ``"\\n\\n"`` is not a word character; NFKC and case folding map each
paragraph apart), so an article's feature counts are *exactly* the sum of its paragraphs'
counts. So each of the 45,087 paragraphs of the pool is tokenised once: its 39,624 distinct
features get a number, and their XXH3 hashes under :func:`simsql.text.signature.wide_seeds` and their
prior weights are cached. An article's counts are then merged in numpy (summed per feature
number), weighted as :meth:`simsql.Fingerprinter.feature_weights` and
:func:`simsql.text.weighting.quantize` weigh them (``(1 + ln count) * prior``, scaled so the article's
heaviest is 2**24, rounded) and reduced to bits by :func:`simsql.text.bitsums.weighted_signatures`,
the library's own rule, 128 articles at a time. The quantized weights are integers and the bit
sums exact integers in float64, so the order of features does not matter: the signatures are
**bit-identical** to ``Fingerprinter.signatures_many``'s, not approximate, at 56 us an article
(93 us with the text, its digest and the COPY line). Originals get ``signatures_many`` itself.

Measured exactness (2026-11-27): ``--validate 2000``: 2,000 filler articles, Hamming distance
over 256 bits between these signatures and ``signatures_many``'s: p50 0, p99 0, max 0 (all 2,000
identical), and the first 50,000 article texts equal ``filler``'s. The 10M table's rows
1..1,000,000 equal, all 20 columns (text, digest, the four words, the generated blocks), the 1M
table ``benchmarks.originality --rows 1000000`` loaded itself (schema ``bench_originality``):
0 rows differ. No row lost its signature to the trigger (0 rows with a NULL word).

Loading: worker processes (``--workers``) turn batches of paragraph numbers into ``COPY`` text
(article text, digest, words); the main process draws the paragraph numbers
(:func:`benchmarks.corpus.article_paragraphs`, the draws the filler generator joins, 4 us an
article) and streams
the workers' bytes into one ``COPY ... (FREEZE)`` after a ``TRUNCATE`` in the same transaction:
the rows arrive frozen and all-visible, so the closing ``VACUUM ANALYZE`` need not rewrite 30 GB
to set hint bits. The stored values are the same as ``load``'s; the row trigger runs on every row.

Figures of the 10M build and of the checks on it: BENCHMARKS.md, "Ten million rows".

The table holds the corpus of the man pages installed when it was built (``build_cache``
fingerprint ``e501e03df63982c3``: 3,560 pages; the 1M table's too). Installing man pages changes
``corpus()``'s originals, and then ``--reuse`` refuses the table as holding other rows; pin the
corpus (``benchmarks.originality.build_cache`` returning that cache's metadata, its pickle kept in
``benchmarks/.cache``) or build again (20 minutes).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash
from sqlalchemy import Engine, text

import simsql
import simsql.store
from simsql.fingerprint import Background
from simsql.text.bitsums import weighted_signatures
from simsql.text.signature import wide_seeds
from simsql.text.tokenize import is_han_feature
from simsql.text.weighting import prior_table, quantize

from .corpus import article_paragraphs, eligible_paragraphs
from .manpages import CorpusUnavailable
from .originality import (
    CORPUS_UNAVAILABLE,
    SOURCES,
    Doc,
    batches,
    doc_model,
    benchmark_fingerprinter,
    centre_on,
    corpus,
    digest,
    engine_for,
    filler,
)

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/h_scale"
SCHEMA = "bench_originality_10m"
ORIGINALS, FRESH, SEED = 200, 1000, 22  # benchmarks.originality's defaults: its corpus and filler


@dataclass(frozen=True)
class ParagraphFeatures:
    """Every eligible paragraph's features, tokenised once: ``fids[offsets[p]:offsets[p + 1]]``
    are paragraph ``p``'s feature numbers, ``counts`` their counts; per feature number, its hash
    under each wide seed (``hashes[k]``) and its prior weight."""

    eligible: list[str]
    offsets: np.ndarray
    fids: np.ndarray
    counts: np.ndarray
    hashes: list[np.ndarray]
    prior: np.ndarray
    one_plus_log: np.ndarray  # 1 + ln(c) at index c, as feature_weights computes it
    is_han: np.ndarray  # per feature number: Han script (a background centres each script apart)
    background: Background | None


def paragraph_features(eligible: list[str]) -> ParagraphFeatures:
    fingerprinter = benchmark_fingerprinter()
    if fingerprinter.weighting != "prior" or fingerprinter.tokenizer != "words" or fingerprinter.shingle_size != 1:
        raise SystemExit(f"built for the default wide configuration (single words, prior weights), not {fingerprinter}")  # fmt: skip
    numbers: dict[bytes, int] = {}
    fids: list[int] = []
    counts: list[int] = []
    offsets = [0]
    for paragraph in eligible:
        for feature, count in fingerprinter.feature_counts(paragraph).items():
            fids.append(numbers.setdefault(feature, len(numbers)))
            counts.append(count)
        offsets.append(len(fids))
    features = list(numbers)
    hashes = [np.fromiter((xxhash.xxh3_64_intdigest(f, seed) for f in features), np.uint64, len(features)) for seed in wide_seeds(fingerprinter.seed)]
    top = max(counts) * (len(eligible) + 1)  # no article repeats a paragraph: counts add up to at most this
    with np.errstate(divide="ignore"):
        one_plus_log = 1.0 + np.log(np.arange(min(top, 1 << 20) + 1, dtype=np.float64))
    return ParagraphFeatures(
        eligible, np.asarray(offsets, np.int64), np.asarray(fids, np.int64), np.asarray(counts, np.int64),
        hashes, prior_table().weights(features), one_plus_log,
        np.fromiter(map(is_han_feature, features), bool, len(features)), fingerprinter.background,
    )  # fmt: skip


SUB_BATCH = 128
"""Articles reduced at once: the byte histograms of :func:`simsql.text.bitsums.weighted_signatures`
(2,048 bins an article) stay in the CPU's cache (55 us an article at 128, 237 at 5,000)."""


def article_words(cache: ParagraphFeatures, articles: Sequence[Sequence[int]]) -> np.ndarray:
    """The four signature words (unsigned, ``[n, 4]``) of articles given as paragraph numbers:
    the paragraphs' counts summed per feature, weighted and reduced exactly as
    ``Fingerprinter.signatures_many`` does for the joined text."""
    if len(articles) > SUB_BATCH:
        return np.concatenate([article_words(cache, articles[i : i + SUB_BATCH]) for i in range(0, len(articles), SUB_BATCH)])
    n = len(articles)
    paragraph = np.fromiter((p for article in articles for p in article), np.int64)
    article_of = np.repeat(np.arange(n, dtype=np.int64), [len(article) for article in articles])
    starts, sizes = cache.offsets[paragraph], cache.offsets[paragraph + 1] - cache.offsets[paragraph]
    total = int(sizes.sum())
    entry = np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    features = np.int64(len(cache.prior))
    keys, inverse = np.unique(np.repeat(article_of, sizes) * features + cache.fids[entry], return_inverse=True)
    counts = np.bincount(inverse, weights=cache.counts[entry]).astype(np.int64)
    doc, fid = keys // features, keys % features
    weights = cache.one_plus_log[counts] * cache.prior[fid]  # (1 + ln count) * prior, feature_weights' order
    quantized = quantize(weights, np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]]))  # the library's rule, each article apart
    is_han = None if cache.background is None else cache.is_han[fid]
    signatures = weighted_signatures([h[fid] for h in cache.hashes], quantized, doc.astype(np.intp), n, cache.background, is_han)
    return np.array([signature.words for signature in signatures], dtype=np.uint64)


def _escaped(body: str) -> str:
    """A COPY text field (``str.translate`` took 100 us an article)."""
    return body.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_text(first: int, kind: str, bodies: Sequence[str], words: np.ndarray) -> bytes:
    """Rows in ``COPY`` text format: id, kind, body, digest, the words as the columns store them
    (signed int64, what ``SimHash().process_bind_param`` gives on PostgreSQL)."""
    signed = words.view(np.int64).tolist()
    lines = [
        f"{first + offset}\t{kind}\t{_escaped(body)}\t{digest(body)}\t{w[0]}\t{w[1]}\t{w[2]}\t{w[3]}\n"
        for offset, (body, w) in enumerate(zip(bodies, signed))
    ]
    return "".join(lines).encode("utf-8")


_CACHE: dict[str, ParagraphFeatures] = {}


def _filler_job(job: tuple[int, list[tuple[int, ...]]]) -> tuple[bytes, float, int]:
    """One batch of filler rows as COPY text (in a worker process), the CPU seconds it took, its rows."""
    first, articles = job
    cpu = time.process_time()
    cache = _CACHE["paragraphs"]
    bodies = ["\n\n".join(cache.eligible[i] for i in article) for article in articles]
    out = copy_text(first, "filler", bodies, article_words(cache, articles))
    return out, time.process_time() - cpu, len(articles)


def original_rows(originals: Sequence[str]) -> bytes:
    signatures = benchmark_fingerprinter().signatures_many(originals, empty="none")
    assert all(signature is not None for signature in signatures), "an original without features"
    words = np.array([signature.words for signature in signatures if signature is not None], dtype=np.uint64)
    return copy_text(1, "original", originals, words)


def _hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.unpackbits((a ^ b).view(np.uint8).reshape(len(a), -1), axis=1).sum(axis=1)


def validate(data: dict[str, Any], cache: ParagraphFeatures, count: int, seed: int, texts: int = 50_000) -> dict[str, Any]:
    """Signatures from cached paragraph features against ``signatures_many`` on the joined text,
    for the first ``count`` filler articles; and the first ``texts`` articles' texts against
    :func:`benchmarks.originality.filler`."""
    low, high = data["lengths"]
    articles = list(article_paragraphs([len(p) for p in cache.eligible], max(count, texts), seed, min_chars=low, max_chars=high))  # fmt: skip
    same_text = all(
        made == "\n\n".join(cache.eligible[i] for i in article) for made, article in zip(filler(data, len(articles), seed), articles)
    )
    bodies = ["\n\n".join(cache.eligible[i] for i in article) for article in articles[:count]]
    started = time.process_time()
    exact = benchmark_fingerprinter().signatures_many(bodies, empty="none")
    exact_cpu = time.process_time() - started
    started = time.process_time()
    words = article_words(cache, articles[:count])
    cached_cpu = time.process_time() - started
    reference = np.array([signature.words for signature in exact if signature is not None], dtype=np.uint64)
    distance = _hamming(reference, words)
    return {
        "articles": count, "texts_equal_filler": same_text, "texts_checked": len(articles),
        "hamming_p50": float(np.percentile(distance, 50)), "hamming_p99": float(np.percentile(distance, 99)),
        "hamming_max": int(distance.max()), "identical": int((distance == 0).sum()),
        "exact_cpu_us_per_article": round(1e6 * exact_cpu / count, 1), "cached_cpu_us_per_article": round(1e6 * cached_cpu / count, 1),
        "mean_paragraphs": statistics.fmean(len(a) for a in articles[:count]), "mean_chars": statistics.fmean(map(len, bodies)),
    }  # fmt: skip


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message} (load {_load()})", file=sys.stderr, flush=True)


def build(
    engine: Engine, data: dict[str, Any], cache: ParagraphFeatures, rows: int, seed: int, workers: int, batch: int, model: type = Doc
) -> dict[str, Any]:
    """The table, as ``benchmarks.originality.build`` would load it; the time of each phase.
    ``model``: :class:`Doc`, or one of another block layout (``--wide-blocks``, :func:`doc_model`)."""
    phases: dict[str, Any] = {}
    table = simsql.store.binding_for(model).table
    names = simsql.store.binding_for(model).names
    columns = ["id", "kind", "body", names.digest, *names.signature_words]
    started = time.perf_counter()
    metadata = model.metadata  # type: ignore[attr-defined]
    metadata.drop_all(engine)
    metadata.create_all(engine)
    with engine.begin() as connection:
        for index in table.indexes:
            index.drop(connection)
    phases["create_s"] = round(time.perf_counter() - started, 1)
    low, high = data["lengths"]
    fillers = rows - len(data["originals"])
    articles = article_paragraphs([len(p) for p in cache.eligible], fillers, seed, min_chars=low, max_chars=high)

    started = time.perf_counter()
    _CACHE["paragraphs"] = cache  # inherited by the forked workers
    written, cpu, reported = 0, 0.0, 0
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {names.table}"))  # FREEZE needs the table emptied in this transaction
        driver: Any = connection.connection.driver_connection  # psycopg's own connection, for COPY
        cursor = driver.cursor()
        with cursor.copy(f"COPY {names.table} ({', '.join(columns)}) FROM STDIN (FREEZE)") as copy:
            copy.write(original_rows(data["originals"]))
            written = len(data["originals"])
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                pending: deque[Any] = deque()
                for job in batches(articles, batch, len(data["originals"]) + 1):
                    pending.append(pool.apply_async(_filler_job, (job,)))
                    while len(pending) >= 2 * workers or (pending and pending[0].ready()):  # bounded, in order
                        chunk, seconds, count = pending.popleft().get()
                        copy.write(chunk)
                        written, cpu = written + count, cpu + seconds
                        if written - reported >= 250_000:
                            reported = written
                            elapsed = time.perf_counter() - started
                            _log(f"{written:,} rows, {written / elapsed:,.0f}/s, workers' CPU {count / max(seconds, 1e-9):,.0f} rows/s each")
                while pending:
                    chunk, seconds, count = pending.popleft().get()
                    copy.write(chunk)
                    written, cpu = written + count, cpu + seconds
    phases["copy_s"] = round(time.perf_counter() - started, 1)
    phases["rows_per_s"] = round(written / phases["copy_s"])
    phases["worker_cpu_s"] = round(cpu, 1)
    phases["worker_cpu_rows_per_s"] = round((written - len(data["originals"])) / max(cpu, 1e-9))
    phases["load_after_copy"] = _load()
    _log(f"copied {written:,} rows in {phases['copy_s']} s")
    started = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))  # as benchmarks.originality.load
        for index in table.indexes:
            index.create(connection)
    phases["index_build_s"] = round(time.perf_counter() - started, 1)
    phases["load_after_index_build"] = _load()
    _log(f"indexes built in {phases['index_build_s']} s")
    started = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM ANALYZE {names.table}"))
    phases["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
    phases["load_after_vacuum"] = _load()
    _log(f"vacuum analyze in {phases['vacuum_analyze_s']} s")
    return phases


def table_facts(engine: Engine, model: type = Doc) -> dict[str, Any]:
    """Rows, rows whose signature the trigger dropped (should be none), sizes."""
    names = simsql.store.binding_for(model).names
    with engine.connect() as connection:
        rows, nulls = connection.execute(text(f"SELECT count(*), count(*) FILTER (WHERE simhash IS NULL OR simhash_w3 IS NULL) FROM {names.table}")).one()  # fmt: skip
        total, heap, indexes = connection.execute(text(
            "SELECT pg_total_relation_size(CAST(:t AS regclass)), pg_relation_size(CAST(:t AS regclass)), pg_indexes_size(CAST(:t AS regclass))"
        ), {"t": names.table}).one()  # fmt: skip
    return {"rows": rows, "rows_without_signature": nulls, "total_bytes": total, "bytes_per_row": round(total / max(rows, 1), 1),
            "heap_bytes_per_row": round(heap / max(rows, 1), 1), "index_bytes_per_row": round(indexes / max(rows, 1), 1),
            "toast_bytes_per_row": round((total - heap - indexes) / max(rows, 1), 1)}  # fmt: skip


def compare(engine: Engine, other: str, rows: int) -> dict[str, Any]:
    """Rows 1..``rows`` of this table against the same ids in schema ``other``'s table (one
    built by ``benchmarks.originality``), every column."""
    names = simsql.store.binding_for(Doc).names
    columns = [c.name for c in simsql.store.binding_for(Doc).table.columns]
    with engine.connect() as connection:
        here = connection.execute(text("SELECT current_schema()")).scalar_one()
        differ = connection.execute(text(
            f"SELECT count(*) FROM {here}.{names.table} a JOIN {other}.{names.table} b USING (id) "
            f"WHERE a.id <= :n AND ({' OR '.join(f'a.{c} IS DISTINCT FROM b.{c}' for c in columns if c != 'id')})"
        ), {"n": rows}).scalar_one()  # fmt: skip
        matched = connection.execute(text(
            f"SELECT count(*) FROM {here}.{names.table} a JOIN {other}.{names.table} b USING (id) WHERE a.id <= :n"
        ), {"n": rows}).scalar_one()  # fmt: skip
    return {"against": f"{other}.{names.table}", "rows_compared": matched, "rows_differing": differ, "columns": len(columns)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the table (0: only --validate)")
    parser.add_argument("--url", default=DEFAULT_URL, help="PostgreSQL only")
    parser.add_argument("--schema", default=SCHEMA)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--source", choices=SOURCES, default="manpages",
                        help="English man pages, or Debian's manuals (benchmarks.originality --source heldout; the smoke test's, no man pages to render)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="processes making COPY text")
    parser.add_argument("--batch", type=int, default=5000, help="articles per worker job")
    parser.add_argument("--validate", type=int, default=0, help="first check this many articles' signatures against signatures_many")
    parser.add_argument("--compare", help="a schema holding benchmarks.originality's table: compare the first rows column for column")
    parser.add_argument("--compare-rows", type=int, default=20_000)
    parser.add_argument("--min-free-gb", type=float, default=15.0, help="refuse to build when the disk would keep less (30 GB for 10M rows)")
    parser.add_argument("--results", type=Path, help="also write the report (JSON) here")
    parser.add_argument("--background", type=Path, help="centre the table's signatures on a wide background (benchmarks.originality --background: the same file)")
    parser.add_argument("--wide-blocks", help="the table's wide block layout, e.g. 10x24 (default: 8x20, WideSimHashMixin's)")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"rows": args.rows, "schema": args.schema, "source": args.source, "load_average_before": _load()}
    started = time.perf_counter()
    try:
        data = corpus(args.rows, ORIGINALS, FRESH, args.seed, "en", args.source)
    except CorpusUnavailable as error:  # only some of the source's packages installed
        print(f"corpus unavailable: {error}", file=sys.stderr)
        return CORPUS_UNAVAILABLE
    if args.background is not None:
        result["background"] = repr(centre_on(args.background, data, args.seed))
    cache = paragraph_features(eligible_paragraphs(data["shared"], data["lengths"][0]))
    result["prepare_s"] = round(time.perf_counter() - started, 1)
    result["paragraphs"], result["features"] = len(cache.eligible), len(cache.prior)
    _log(f"{len(cache.eligible):,} paragraphs, {len(cache.prior):,} features cached in {result['prepare_s']} s")
    if args.validate:
        result["validation"] = validate(data, cache, args.validate, args.seed)
        _log(f"validation {result['validation']}")
    if args.rows:
        free = shutil.disk_usage("/").free
        need = 3.1e3 * args.rows  # bytes a row, measured on the 1M table (heap, TOAST, indexes)
        result["disk_free_before_gb"] = round(free / 1e9, 1)
        if (free - need) / 1e9 < args.min_free_gb:
            raise SystemExit(f"{free / 1e9:.0f} GB free, {need / 1e9:.0f} GB needed: under {args.min_free_gb} GB would remain")
        engine = engine_for(args.url, schema=args.schema)
        if engine.dialect.name != "postgresql":
            raise SystemExit("PostgreSQL only (COPY)")
        model = Doc
        if args.wide_blocks:  # the same configuration (centred by centre_on above, or not), other blocks
            fingerprinter = benchmark_fingerprinter()
            model = doc_model(fingerprinter.background, wide_blocks=args.wide_blocks)
            result["wide_blocks"] = args.wide_blocks
        result["build"] = build(engine, data, cache, args.rows, args.seed, args.workers, args.batch, model)
        result["table"] = table_facts(engine, model)
        result["disk_free_after_gb"] = round(shutil.disk_usage("/").free / 1e9, 1)
        if args.compare:
            result["compare"] = compare(engine, args.compare, min(args.compare_rows, args.rows))
        engine.dispose()
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["load_average_after"] = _load()
    if args.results:
        args.results.write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
