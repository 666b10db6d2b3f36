"""Fingerprint throughput on real text: simsql next to the ``simhash`` package, in one run.

Both fingerprint the same documents of the man-page corpus (:mod:`benchmarks.corpus`), English
and Chinese, on one core:

* ``simsql``: ``Fingerprinter().fingerprint_many(texts)`` (words, log counts, jieba for Han text);
* ``simhash package``: ``Simhash(text).value`` with its defaults (character 4-grams of the
  lower-cased letters, MD5 per feature, f=64);
* ``jieba.lcut``: segmentation alone, the bound for any word-based fingerprint of Chinese text;
  once on the whole text (what a user calling ``jieba.lcut`` would pay) and once on the Han runs
  only (what simsql hands to jieba: Latin words are cut by a regex instead).

``simhash`` 2.1.2 multiplies a ``uint8`` bit array by a feature's count, which raises
``OverflowError`` under numpy 2 as soon as one 4-gram occurs more than 255 times in a document
(long pages). Those documents are counted and left out of the package's figure; simsql's ratio
is computed on exactly the same subset, and simsql is also reported on every document.

Throughput is the best of ``repeats`` timed passes (the machine may be shared), in MB/s of UTF-8
input and documents per second. Run alone with ``python -m benchmarks.throughput [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import corpus
from .internals import HAN_RUN, warm_jieba


def _mb(texts: Sequence[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def _sample(docs: Sequence[corpus.Document], count: int | None) -> list[str]:
    """Every k-th document (deterministic, spread over the sorted corpus)."""
    if count is None or count >= len(docs):
        return [d.text for d in docs]
    step = len(docs) / count
    return [docs[int(i * step)].text for i in range(count)]


def _best(fn: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times), times


def _rate(texts: Sequence[str], seconds: float, times: list[float]) -> dict[str, Any]:
    mb = _mb(texts)
    return {
        "documents": len(texts),
        "mb": mb,
        "seconds": seconds,
        "mb_per_second": mb / seconds if seconds > 0 else None,
        "docs_per_second": len(texts) / seconds if seconds > 0 else None,
        "all_seconds": times,
    }


def _simhash_value(text: str) -> int | None:
    from simhash import Simhash

    try:
        return Simhash(text).value
    except OverflowError:
        return None


def _package_subset(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(texts the package fingerprints, texts where it raises OverflowError)."""
    ok, failed = [], []
    for t in texts:
        (ok if _simhash_value(t) is not None else failed).append(t)
    return ok, failed


def _simhash_many(texts: Sequence[str]) -> None:
    from simhash import Simhash

    for t in texts:
        Simhash(t).value


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _package_rates(
    entry: dict[str, Any], texts: Sequence[str], fingerprint: Callable[[Sequence[str]], object], repeats: int
) -> str | None:
    """The simhash package, and simsql on exactly the documents the package fingerprints; a note
    when the package failed on some (its OverflowError under numpy 2)."""
    ok, failed = _package_subset(texts)  # also warms the package up
    seconds, times = _best(lambda: _simhash_many(ok), repeats)
    entry["simhash_package"] = _rate(ok, seconds, times)
    entry["simhash_package"]["failed_documents"] = len(failed)
    entry["simhash_package"]["failed_mb"] = _mb(failed)
    seconds, times = _best(lambda: fingerprint(ok), repeats)
    entry["simsql_same_subset"] = _rate(ok, seconds, times)
    entry["ratio_simsql_to_simhash"] = _ratio(entry["simsql_same_subset"]["mb_per_second"], entry["simhash_package"]["mb_per_second"])
    if not failed:
        return None
    return (
        f"simhash 2.1.2 raised OverflowError (numpy 2) on {len(failed)} of "
        f"{len(texts)} documents ({_mb(failed):.2f} of {_mb(texts):.2f} MB); its figure and "
        "the ratio use only the documents it fingerprints"
    )


def _jieba_rates(entry: dict[str, Any], texts: Sequence[str], repeats: int) -> None:
    """``jieba.lcut`` alone on the whole text, and on the Han runs simsql hands it."""
    import jieba

    seconds, times = _best(lambda: [jieba.lcut(t) for t in texts], repeats)
    entry["jieba_lcut"] = _rate(texts, seconds, times)
    runs = [HAN_RUN.findall(t) for t in texts]
    seconds, times = _best(lambda: [[jieba.lcut(r) for r in rs] for rs in runs], repeats)
    entry["jieba_lcut_han_runs"] = _rate(texts, seconds, times)
    entry["ratio_simsql_to_jieba_lcut"] = _ratio(entry["simsql"]["mb_per_second"], entry["jieba_lcut"]["mb_per_second"])
    entry["ratio_simsql_to_jieba_lcut_han_runs"] = _ratio(entry["simsql"]["mb_per_second"], entry["jieba_lcut_han_runs"]["mb_per_second"])


def run(quick: bool) -> dict[str, Any]:
    """Throughput figures as a JSON-able dict (see the module docstring)."""
    import jieba

    from simsql import Fingerprinter

    logging.getLogger("simhash").setLevel(logging.ERROR)
    jieba.setLogLevel(logging.WARNING)
    started = time.perf_counter()
    load_before = os.getloadavg()
    repeats = 1 if quick else 3
    limit = corpus.QUICK_DOCUMENTS if quick else None
    english = _sample(corpus.english_documents(limit), 100 if quick else None)
    chinese = _sample(corpus.chinese_documents(limit), 100 if quick else None)
    fingerprinter = Fingerprinter()

    # Warm-up: jieba's dictionaries (global and simsql's private one) load in ~1 s.
    jieba.initialize()
    warm_jieba()
    fingerprinter.fingerprint_many(chinese[:3] + english[:3])
    jieba.lcut(chinese[0])

    out: dict[str, Any] = {
        "quick": quick,
        "repeats": repeats,
        "timing": f"best of {repeats} passes, one process, one core",
        "simsql_config": "Fingerprinter() (words, log counts, jieba HMM for Han runs, XXH3-64)",
        "simhash_package_config": "Simhash(text) defaults: lower-cased letters, char 4-grams, MD5, f=64",
    }
    notes = []
    for lang, texts in (("en", english), ("zh", chinese)):
        entry: dict[str, Any] = {}
        seconds, times = _best(lambda: fingerprinter.fingerprint_many(texts), repeats)
        entry["simsql"] = _rate(texts, seconds, times)
        note = _package_rates(entry, texts, fingerprinter.fingerprint_many, repeats)
        if note:
            notes.append(f"{lang}: {note}")
        if lang == "zh":
            _jieba_rates(entry, texts, repeats)
        out[lang] = entry
    notes.append(
        "jieba.lcut on the whole text also segments the Latin parts (option names, code) with its "
        "HMM; simsql sends only Han runs to jieba, so its Chinese throughput can exceed whole-text "
        "jieba.lcut. jieba_lcut_han_runs (MB/s of the whole input) is the true bound."
    )
    out["note"] = "; ".join(notes)
    out["load_average_before"] = list(load_before)
    out["load_average_after"] = list(os.getloadavg())
    out["seconds"] = time.perf_counter() - started
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the result JSON here")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    payload = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(payload)
    print(payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
