"""The real-text latency section of BENCHMARKS.md (``python -m benchmarks --sections latency``):
every query path beside the plain scan, per fingerprint configuration and table size."""

from __future__ import annotations

import math
import re
from typing import Any

from .markdown import NOT_MEASURED, div, get, is_num, n_label, num, pct, ratio, table

LATENCY_WORKLOADS: tuple[tuple[str, str], ...] = (
    ("near-dup", "a stored article with one paragraph changed (its copy is its only close neighbour)"),
    ("top-10 clustered", "a new member of a 12-article series (ten near neighbours)"),
    ("top-10 spread", "a fresh article of random paragraphs: an original, whose related articles are far"),
)


def _scan_of(system: str) -> str:
    """The plain-scan row a system is compared with (same question, no index)."""
    if "(3 bits)" in system:
        return "plain scan (3 bits)"
    found = re.search(r"\((\d+) bits\)", system)
    if found:
        return f"plain scan ({found.group(1)} bits)"
    return "plain scan top-10"


def _latency_rows(entry: dict[str, Any]) -> list[list[str]]:
    rows = []
    for workload, _ in LATENCY_WORKLOADS:
        systems = get(entry, "workloads", workload, "systems") or {}
        for name, r in systems.items():
            scan = get(systems, _scan_of(name), "p50_ms")
            scan99 = get(systems, _scan_of(name), "p99_ms")
            is_scan = name.startswith("plain scan")
            like = r.get("same_queries_as_scan") or r  # ratios on the queries the scan answered
            rows.append([
                workload, name, num(r.get("p50_ms")), num(r.get("p99_ms")), pct(r.get("recall")),
                "1×" if is_scan else ratio(div(scan, like.get("p50_ms"))),
                "1×" if is_scan else ratio(div(scan99, like.get("p99_ms"))),
                str(r.get("timings", "")),
            ])  # fmt: skip
    return rows


def _equal_latency_rows(entry: dict[str, Any]) -> list[list[str]]:
    """Each approximate simsql radius beside the pgvector ``ef_search`` of nearest p50."""
    rows = []
    for workload in ("top-10 clustered", "top-10 spread"):
        systems = get(entry, "workloads", workload, "systems") or {}
        vectors = {k: v for k, v in systems.items() if k.startswith("pgvector")}
        for name, r in systems.items():
            if not name.startswith("simsql approximate") or not vectors or not is_num(r.get("p50_ms")):
                continue
            peer, v = min(vectors.items(), key=lambda kv: abs(math.log(kv[1]["p50_ms"] / r["p50_ms"])))
            best = max(vectors.items(), key=lambda kv: (kv[1]["recall"], -kv[1]["p50_ms"]))
            rows.append([
                workload, name.removeprefix("simsql approximate "), num(r["p50_ms"]), pct(r.get("recall")),
                peer.removeprefix("pgvector HNSW "), num(v["p50_ms"]), pct(v.get("recall")),
                f"{best[0].removeprefix('pgvector HNSW ')}: {pct(best[1].get('recall'))} at {num(best[1]['p50_ms'])} ms",
            ])  # fmt: skip
    return rows


def latency_section(results: dict[str, Any]) -> str:
    """Issue 8's real-text latencies: every query path beside the plain scan, per configuration."""
    lines = ["## Real-text query latency (English and Chinese articles)", ""]
    latency = results.get("latency") or {}
    if not latency:
        return "\n".join([*lines, NOT_MEASURED])
    lines += [
        "Articles are 4 to 16 real man-page paragraphs (80% English, 20% Chinese, one document in five "
        "kept aside), with planted variants and series; queries are new articles: "
        + "; ".join(f"`{w}`: {d}" for w, d in LATENCY_WORKLOADS) + ". "
        "Through the ORM, p50/p99 over all timed passes (`timings`), every system on the same queries in "
        "interleaved passes. `× scan` is the plain scan's latency over the system's for the same question, on "
        "the queries the scan answered (scans run on a subset: their cost hardly varies) "
        "(`ORDER BY bit_count(...) LIMIT`, `WHERE bit_count(...) <= t`). `find_original` rows time the "
        "index stage it runs (`simsql.queries.originality_search(Model, q, t)`: the 16 nearest candidates from "
        "radius-2 block probes, radius 1 at 7 bits; results before 2026-11-22 13:00 timed `most_similar(..., limit=1, "
        "max_distance=t)` with probes reaching every row within t), without fingerprinting the text or "
        "reading the candidates' text. Recall is against exact distances (top-10 with ties; for `find_original`: "
        "the nearest row within the threshold, or none: below 100% at 14 bits, where radius-2 probes reach a "
        "row 12-14 bits away only when one of its blocks is within 2 bits).",
        "",
    ]
    for config, sizes in latency.items():
        for n, entry in sorted(sizes.items(), key=lambda kv: int(kv[0])):
            bits = entry.get("bits") or {}
            load = entry.get("load_average")
            lines += [
                f"### `{config}` fingerprints, N={n_label(n)}",
                "",
                f"Configuration `{entry.get('config', '?')}`; bits: {num(bits.get('entropy_bits'))} of 64 bits of entropy, "
                f"fullest 16-bit bucket {num(bits.get('fullest_bucket_vs_uniform'))}× uniform, the bucket a row sits in "
                f"{num(bits.get('bucket_seen_by_a_row_vs_uniform'))}× uniform on average. Load average after the run: "
                f"{', '.join(num(x) for x in load) if load else '?'} (2 cores shared). Command: `{entry.get('command', '?')}`.",
                "",
                table(["workload", "system", "p50 ms", "p99 ms", "recall", "× scan p50", "× scan p99", "timings"], _latency_rows(entry), "llrrrrrr"),
                "",
            ]
            quantiles = {w: get(entry, "workloads", w, "kth_distance_quantiles") for w, _ in LATENCY_WORKLOADS}
            lines.append("10th-neighbour distance (p10 / p50 / p90): " + "; ".join(
                f"{w} {'/'.join(num(q[k]) for k in ('0.1', '0.5', '0.9'))}" for w, q in quantiles.items() if q) + ".")  # fmt: skip
            equal = _equal_latency_rows(entry)
            if equal:
                lines += [
                    "",
                    "Approximate top-10 beside pgvector HNSW at about equal latency (the `ef_search` whose p50 is nearest):",
                    "",
                    table(["workload", "simsql", "p50 ms", "recall", "pgvector", "p50 ms", "recall", "pgvector's best"], equal, "llrrlrrl"),
                ]
            lines.append("")
    return "\n".join(lines)


def _p50_vs_scan(systems: dict[str, Any], name: str, p99: bool = False) -> str:
    r = systems.get(name)
    if not r:
        return "–"
    key = "p99_ms" if p99 else "p50_ms"
    like = r.get("same_queries_as_scan") or r
    return f"{num(r.get(key))} ms ({ratio(div(get(systems, _scan_of(name), key), like.get(key)))})"


def latency_headline(results: dict[str, Any]) -> str:
    """A summary table of the real-text latencies: the questions issue 8 asks, p50 (× the plain
    scan), with a ``find_original`` column for each threshold the run measured."""
    entries = [
        (config, n, entry)
        for config, sizes in (results.get("latency") or {}).items()
        for n, entry in sorted(sizes.items(), key=lambda kv: int(kv[0]))
    ]
    found = re.compile(r"simsql find_original \((\d+) bits\)")
    thresholds = sorted({
        int(m.group(1)) for _, _, entry in entries
        for name in (get(entry, "workloads", "top-10 spread", "systems") or {}) if (m := found.fullmatch(name))
    })  # fmt: skip
    rows = []
    for config, n, entry in entries:
        near = get(entry, "workloads", "near-dup", "systems") or {}
        spread = get(entry, "workloads", "top-10 spread", "systems") or {}
        clustered = get(entry, "workloads", "top-10 clustered", "systems") or {}
        rows.append([
            f"`{config}`", n_label(n), num(get(entry, "bits", "bucket_seen_by_a_row_vs_uniform")) + "×",
            _p50_vs_scan(near, "simsql similar_to (3 bits)"),
            *(_p50_vs_scan(spread, f"simsql find_original ({t} bits)") for t in thresholds),
            _p50_vs_scan(near, "simsql top-10") + " / p99 " + _p50_vs_scan(near, "simsql top-10", p99=True),
            _p50_vs_scan(clustered, "simsql top-10"),
            _p50_vs_scan(spread, "simsql top-10") + " / p99 " + _p50_vs_scan(spread, "simsql top-10", p99=True),
        ])  # fmt: skip
    header = [
        "fingerprints", "N", "bucket crowding", "near-dup (3 bits)",
        *(f"find_original {t} bits (original)" for t in thresholds),
        "top-10, copy only", "top-10 clustered", "top-10 related (far)",
    ]  # fmt: skip
    return table(header, rows, "llr" + "l" * (len(header) - 3)) if rows else "Real-text latency: not measured in this run."
