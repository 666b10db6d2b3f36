"""Timing and scoring of query answers, shared by every latency benchmark: the same warm-up, the
same percentiles, the same recall rules, so figures from different runs mean the same thing."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def time_queries(fn: Callable[[int], Any], queries: Sequence[int], warmup: int = 3) -> tuple[list[float], list[Any]]:
    """Seconds and answer of ``fn`` for each query, after ``warmup`` untimed calls."""
    for q in queries[:warmup]:
        fn(q)
    times, answers = [], []
    for q in queries:
        started = time.perf_counter()
        answers.append(fn(q))
        times.append(time.perf_counter() - started)
    return times, answers


def summary(times: list[float]) -> dict[str, float]:
    """p50, p99 and mean in milliseconds, and queries per second, of timed calls."""
    ordered = sorted(times)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "mean_ms": 1000 * statistics.fmean(ordered),
        "qps": len(ordered) / sum(ordered),
    }


def near_recall(found: list[set[int]], truth: list[set[int]]) -> float:
    """Share of the true near-duplicates (ids within the bound) that the answers hold."""
    wanted = sum(len(t) for t in truth)
    return 1.0 if wanted == 0 else sum(len(f & t) for f, t in zip(found, truth)) / wanted


def topk_recall(found: list[list[int]], truth_kth: list[int]) -> float:
    """Top-10 recall with ties: an answer is right if its true distance is within the true 10th."""
    hits = sum(sum(1 for d in ds[:10] if d <= kth) for ds, kth in zip(found, truth_kth))
    return hits / (10 * len(found))


def interleaved(
    systems: dict[str, Callable[[int], Any]], queries: Sequence[int], repeat: int, subset: dict[str, int]
) -> dict[str, tuple[list[float], list[Any]]]:
    """Time every system on the same queries, ``repeat`` passes interleaved so load drifts hit
    all systems alike; answers are kept from the first pass. ``subset`` caps a system's queries."""
    out: dict[str, tuple[list[float], list[Any]]] = {name: ([], []) for name in systems}
    for number in range(repeat):
        for name, fn in systems.items():
            chosen = queries[: subset.get(name, len(queries))]
            times, answers = time_queries(fn, chosen, warmup=3 if number == 0 else 0)
            out[name][0].extend(times)
            if number == 0:
                out[name][1].extend(answers)
    return out


def emit(report: dict[str, Any], path: Path | None) -> None:
    """A benchmark's report as indented JSON on standard output, and in ``path`` too when given
    (its folder made if missing): the one way the newer benchmarks hand their figures over."""
    rendered = json.dumps(report, indent=2)
    print(rendered)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered + "\n")
