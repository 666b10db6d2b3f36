"""Fingerprint throughput on real text: simsql next to the ``simsql`` peers in one run.

Peers: the ``simhash`` package (PyPI 2.1.2, the most used Python SimHash; its defaults: character
4-grams, 64 bits) on the same documents, and for Chinese ``jieba.lcut`` alone, which bounds any
jieba-based fingerprint. One core, no multiprocessing. simhash 2.1.2 raises ``OverflowError``
under numpy 2 on long documents; it is measured on the documents where it works, and simsql's
ratio is computed on exactly that subset.
"""

from __future__ import annotations

import time
from typing import Any

import simsql

from . import corpus


def _mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6


def _timed(fn: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    fn(texts)
    return time.perf_counter() - started


def _simhash_package(texts: list[str]) -> tuple[list[str], float]:
    """(texts it fingerprinted, seconds spent on them)."""
    from simhash import Simhash

    ok: list[str] = []
    seconds = 0.0
    for text in texts:
        started = time.perf_counter()
        try:
            Simhash(text)
        except (OverflowError, ValueError):
            continue
        seconds += time.perf_counter() - started
        ok.append(text)
    return ok, seconds


def _language(texts: list[str], chinese: bool) -> dict[str, Any]:
    fingerprinter = simsql.Fingerprinter()
    fingerprinter.fingerprint("预热 warm up")  # load jieba's dictionary outside the timings
    total_mb = _mb(texts)
    all_seconds = _timed(lambda ts: fingerprinter.fingerprint_many(ts, empty="none"), texts)
    ok, package_seconds = _simhash_package(texts)
    subset_seconds = _timed(lambda ts: fingerprinter.fingerprint_many(ts, empty="none"), ok)
    ok_mb = _mb(ok)
    result: dict[str, Any] = {
        "documents": len(texts),
        "mb": total_mb,
        "simsql_mb_s": total_mb / all_seconds,
        "simsql_docs_s": len(texts) / all_seconds,
        "simhash_package_documents": len(ok),
        "simhash_package_mb": ok_mb,
        "simhash_package_mb_s": ok_mb / package_seconds if package_seconds else None,
        "simsql_mb_s_same_subset": ok_mb / subset_seconds if subset_seconds else None,
        "note": f"simhash 2.1.2 raised OverflowError (numpy 2) on {len(texts) - len(ok)} of {len(texts)} documents "
        f"({total_mb - ok_mb:.1f} MB); ratios use the {len(ok)} documents it fingerprinted",
    }
    if result["simhash_package_mb_s"]:
        result["ratio"] = result["simsql_mb_s_same_subset"] / result["simhash_package_mb_s"]
    if chinese:
        import jieba

        jieba.lcut("预热")
        seconds = _timed(lambda ts: [jieba.lcut(t) for t in ts], texts)
        result["jieba_lcut_mb_s"] = total_mb / seconds
        result["simsql_vs_jieba"] = result["simsql_mb_s"] / result["jieba_lcut_mb_s"]
    return result


def run(quick: bool) -> dict[str, Any]:
    limit = 100 if quick else None
    english = [d.text for d in corpus.english_documents(limit)]
    chinese = [d.text for d in corpus.chinese_documents(limit)]
    return {"english": _language(english, chinese=False), "chinese": _language(chinese, chinese=True)}
