"""Render ``BENCHMARKS.md`` and its plots from a benchmark results dict.

The dict is the one ``python -m benchmarks`` saves as JSON (sections ``machine``, ``command``,
``fingerprint``, ``quality``, ``queries``, ``ingest``; any of them may be missing, and a missing
one renders as "not measured in this run"). Everything in the markdown comes from the dict, so
re-rendering a saved run reproduces the document::

    python -m benchmarks.report benchmarks/results/full.json [--markdown BENCHMARKS.md] [--plots DIR]

:func:`headline` gives the compact table for the README.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
NOT_MEASURED = "_Not measured in this run._"
WORKLOADS: tuple[tuple[str, str], ...] = (
    ("near-dup", "Near-duplicate lookup (distance <= 3): `similar_to` / `WHERE distance <= 3`"),
    ("top-10 clustered", "Top-10 most similar, query near a cluster (10th neighbour close)"),
    ("top-10 spread", "Top-10 most similar, unrelated query (10th neighbour far)"),
)
SYSTEM_ORDER: tuple[str, ...] = (
    "simsql",
    "simsql most_similar_many",
    "plain scan",
    "pgvector HNSW ef_search=40",
    "pgvector HNSW ef_search=200",
    "simhash package",
)
CONFIG_ORDER: tuple[str, ...] = (
    "default", "count", "shingle3", "chars", "idf", "jieba_idf", "bigrams", "simhash package",
)  # fmt: skip
QUALITY_THRESHOLDS: tuple[int, ...] = (3, 7)


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def _is_num(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def num(x: object, unit: str = "") -> str:
    """A number with about three significant digits, thousands separators; '–' when missing."""
    if not _is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    a = abs(v)
    if isinstance(x, int) or (a < 1e15 and v == int(v) and a >= 1):
        return f"{int(v):,}" + unit
    if a >= 100:
        s = f"{v:,.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    elif a == 0:
        s = "0"
    elif a >= 0.001:
        s = f"{v:.3g}"
    else:
        s = f"{v:.1e}"
    return s + unit


def ratio(x: object) -> str:
    """A ratio like ``12×`` or ``0.42×``."""
    if not _is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    if v >= 100:
        return f"{v:,.0f}×"
    if v >= 10:
        return f"{v:.0f}×"
    if v >= 1:
        return f"{v:.1f}×"
    return f"{v:.2g}×"


def pct(x: object) -> str:
    if not _is_num(x):
        return "–"
    v = 100 * float(x)  # type: ignore[arg-type]
    if v == 0:
        return "0%"
    if v >= 10 or v == round(v):
        return f"{v:.0f}%"
    if v >= 1:
        return f"{v:.1f}%"
    return f"{v:.2g}%"


def rate(x: object) -> str:
    """A small rate (false-positive rate): percent when visible, else scientific."""
    if not _is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    if v == 0:
        return "0"
    if v >= 0.001:
        return pct(v)
    return f"{v:.1e}"


def _div(a: object, b: object) -> float | None:
    if _is_num(a) and _is_num(b) and float(b) != 0:  # type: ignore[arg-type]
        return float(a) / float(b)  # type: ignore[arg-type]
    return None


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    """A GitHub markdown table; ``align`` is one letter per column (l/r), default l then r."""
    header = list(header)
    align = align or "l" + "r" * (len(header) - 1)
    marks = [":--" if a == "l" else "--:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def n_label(n: int | str) -> str:
    n = int(n)
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % (div // 10) == 0:
            v = n / div
            return f"{v:g}{suffix}"
    return f"{n:,}"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


def _sizes(results: dict[str, Any]) -> list[str]:
    queries = results.get("queries") or {}
    return sorted(queries, key=int)


def _systems(results: dict[str, Any], workload: str) -> list[str]:
    seen: list[str] = []
    for n in _sizes(results):
        for s in _get(results, "queries", n, "workloads", workload, "systems") or {}:
            if s not in seen:
                seen.append(s)
    known = [s for s in SYSTEM_ORDER if s in seen]
    return known + [s for s in seen if s not in known]


def _machine_section(results: dict[str, Any]) -> str:
    m = results.get("machine") or {}
    lines = ["## Machine and versions", ""]
    if not m:
        lines.append(NOT_MEASURED)
    else:
        labels = [
            ("date", "Date"), ("cpu", "CPU"), ("cores", "Cores"), ("python", "Python"),
            ("postgres", "PostgreSQL"), ("pgvector", "pgvector"), ("simsql", "simsql"),
            ("sqlalchemy", "SQLAlchemy"), ("numpy", "numpy"), ("simhash_package", "simhash (PyPI)"),
        ]  # fmt: skip
        rows = [(label, str(m[key]) if m.get(key) is not None else "–") for key, label in labels if key in m]
        rows += [(k, str(v)) for k, v in m.items() if k not in dict(labels)]
        lines.append(table(["", ""], rows, "ll"))
    command = results.get("command")
    lines += ["", "Command:", "", "```", command or "(not recorded)", "```"]
    if results.get("quick"):
        lines += ["", "**This is a quick (smoke-test) run: sizes are tiny and figures are not representative.**"]
    return "\n".join(lines)


def _query_section(results: dict[str, Any], plots: dict[str, str]) -> str:
    lines = ["## Query latency", ""]
    sizes = _sizes(results)
    if not sizes:
        return "\n".join([*lines, NOT_MEASURED])
    lines += [
        "All systems answer the same queries on the same fingerprints in one PostgreSQL server, "
        "measured as the application sees them (Python, SQLAlchemy, psycopg, local socket). "
        "`vs simsql` is the system's p50 over simsql's (above 1× = slower than simsql); "
        "`faster than scan` is the plain scan's p50 over the system's. Recall is against exact "
        "Hamming distances (top-10 with ties: an answer counts when it is within the true 10th distance).",
        "",
    ]
    for workload, title in WORKLOADS:
        lines += [f"### {workload}: {title}", ""]
        systems = _systems(results, workload)
        if not systems:
            lines += [NOT_MEASURED, ""]
            continue
        rows = []
        notes = []
        for n in sizes:
            entry = _get(results, "queries", n, "workloads", workload)
            if not entry:
                continue
            sys_rows = entry.get("systems") or {}
            base = _get(sys_rows, "simsql", "p50_ms")
            scan = _get(sys_rows, "plain scan", "p50_ms")
            for s in systems:
                r = sys_rows.get(s)
                if r is None:
                    continue
                p50 = r.get("p50_ms")
                queries = f" ({r['queries']} queries)" if s == "plain scan" and r.get("queries") else ""
                rows.append(
                    [
                        n_label(n),
                        s + queries,
                        num(p50),
                        num(r.get("p99_ms")),
                        num(r.get("qps")),
                        pct(r.get("recall")),
                        ratio(_div(p50, base)) if s != "simsql" else "1×",
                        ratio(_div(scan, p50)) if s != "plain scan" else "1×",
                    ]
                )
            kth = entry.get("kth_within_11_bits")
            med = entry.get("median_kth_distance")
            if _is_num(kth) or _is_num(med):
                notes.append(f"N={n_label(n)}: median 10th-neighbour distance {num(med)}, within 11 bits for {pct(kth)} of queries")
        lines.append(
            table(["N", "system", "p50 ms", "p99 ms", "qps", "recall", "vs simsql (p50)", "faster than scan"], rows, "llrrrrrr")
        )
        if workload == "near-dup":
            lines += [
                "",
                "`simsql most_similar_many` answers all the queries in one round trip (batched, for ingest "
                "pipelines): its qps is for the batch, it has no per-query latency.",
            ]
        if notes:
            lines += ["", "; ".join(notes) + "."]
        for n in sizes:
            note = _get(results, "queries", n, "pgvector_note")
            if note:
                lines += ["", f"N={n_label(n)}: pgvector {note}."]
        if workload in plots:
            lines += ["", f"![{workload} p50 latency vs N]({plots[workload]})"]
        lines.append("")
    return "\n".join(lines).rstrip()


def _index_section(results: dict[str, Any]) -> str:
    lines = ["## Index build and size", ""]
    sizes = _sizes(results)
    if not sizes:
        return "\n".join([*lines, NOT_MEASURED])
    lines += [
        "Bytes per row are the table, its primary key and its indexes (`pg_total_relation_size`) for "
        "the PostgreSQL systems, and Python heap (tracemalloc) for the in-memory `simhash` package index. "
        "Ratios are to simsql's block indexes.",
        "",
    ]
    rows = []
    for n in sizes:
        e = results["queries"][n]
        s = e.get("simsql_load") or {}
        rows.append(
            [n_label(n), "simsql (4 block indexes)", num(s.get("load_rows_per_second")), num(s.get("index_build_seconds")), "1×",
             num(s.get("bytes_per_row")), "1×"]
        )  # fmt: skip
        v = e.get("pgvector_load")
        if v:
            built = "index_build_seconds" in v
            rows.append(
                [n_label(n), "pgvector HNSW" if built else "pgvector (no HNSW index)", "–", num(v.get("index_build_seconds")) if built else "not built",
                 ratio(_div(v.get("index_build_seconds"), s.get("index_build_seconds"))) if built else "–",
                 num(v.get("bytes_per_row")), ratio(_div(v.get("bytes_per_row"), s.get("bytes_per_row")))]
            )  # fmt: skip
        pkg = _get(e, "workloads", "near-dup", "systems", "simhash package")
        if pkg:
            rows.append(
                [n_label(n), "simhash package SimhashIndex(k=3), in memory", "–", num(pkg.get("index_build_seconds")),
                 ratio(_div(pkg.get("index_build_seconds"), s.get("index_build_seconds"))),
                 num(pkg.get("bytes_per_row")), ratio(_div(pkg.get("bytes_per_row"), s.get("bytes_per_row")))]
            )  # fmt: skip
    lines.append(
        table(["N", "system", "load rows/s (COPY)", "index build s", "build vs simsql", "bytes/row", "size vs simsql"], rows, "llrrrrr")
    )
    return "\n".join(lines)


def _dedup_section(results: dict[str, Any]) -> str:
    lines = ["## Whole-table deduplication (all pairs within 3 bits)", ""]
    rows = []
    for n in _sizes(results):
        d = _get(results, "queries", n, "dedup")
        if not d:
            continue
        base = _get(d, "simsql near_duplicates", "seconds")
        for name, r in d.items():
            rows.append([n_label(n), name, num(r.get("seconds")), f"{r.get('pairs', '–'):,}" if _is_num(r.get("pairs")) else "–",
                         ratio(_div(r.get("seconds"), base)) if name != "simsql near_duplicates" else "1×"])  # fmt: skip
    if not rows:
        return "\n".join([*lines, NOT_MEASURED])
    lines.append(table(["N", "system", "seconds", "pairs", "time vs simsql"], rows, "llrrr"))
    return "\n".join(lines)


def _fingerprint_section(results: dict[str, Any]) -> str:
    lines = ["## Fingerprint throughput", ""]
    f = results.get("fingerprint")
    if not f or not (f.get("en") or f.get("zh")):
        return "\n".join([*lines, NOT_MEASURED])
    lines += [
        f"Man-page corpus, {f.get('timing', 'best of several passes, one core')}. simsql: "
        f"{f.get('simsql_config', 'Fingerprinter()')}; simhash package: {f.get('simhash_package_config', 'defaults')}. "
        "MB are MB of UTF-8 input. `vs simsql` is the row's MB/s over simsql's on the same documents.",
        "",
    ]
    rows = []
    names = {"en": "English", "zh": "Chinese"}
    for lang in ("en", "zh"):
        e = f.get(lang)
        if not e:
            continue
        simsql_all = e.get("simsql") or {}
        simsql_sub = e.get("simsql_same_subset") or {}
        pkg = e.get("simhash_package") or {}

        def row(label: str, r: dict[str, Any], base: dict[str, Any] | None) -> list[str]:
            return [names[lang], label, num(r.get('documents')), num(r.get("mb")), num(r.get("mb_per_second")),
                    num(r.get("docs_per_second")), ratio(_div(r.get("mb_per_second"), (base or {}).get("mb_per_second"))) if base is not None else "1×"]  # fmt: skip

        rows.append(row("simsql, all documents", simsql_all, None))
        if pkg:
            failed = pkg.get("failed_documents")
            rows.append(row("simsql, documents the package handles", simsql_sub, None))
            label = "simhash package" + (f" ({failed} documents failed)" if failed else "")
            rows.append(row(label, pkg, simsql_sub))
        if e.get("jieba_lcut"):
            rows.append(row("jieba.lcut alone, whole text", e["jieba_lcut"], simsql_all))
        if e.get("jieba_lcut_han_runs"):
            rows.append(row("jieba.lcut alone, Han runs only (simsql's share)", e["jieba_lcut_han_runs"], simsql_all))
    lines.append(table(["text", "fingerprinter", "docs", "MB", "MB/s", "docs/s", "vs simsql"], rows, "llrrrrr"))
    summary = []
    for lang in ("en", "zh"):
        r = _get(f, lang, "ratio_simsql_to_simhash")
        if _is_num(r):
            summary.append(f"{names[lang]}: simsql is {ratio(r)} the simhash package's throughput")
    r = _get(f, "zh", "ratio_simsql_to_jieba_lcut")
    if _is_num(r):
        summary.append(f"simsql on Chinese runs at {ratio(r)} the speed of `jieba.lcut` alone on the same text")
    if summary:
        lines += ["", "; ".join(summary) + "."]
    if f.get("note"):
        lines += ["", f"Note: {f['note']}"]
    if f.get("load_average_before"):
        lines += ["", f"Load average (1, 5, 15 min) before timing: {', '.join(num(x) for x in f['load_average_before'])}."]
    return "\n".join(lines)


def _kind_order(keys: Iterable[str]) -> list[str]:
    def key(k: str) -> tuple[int, str, float]:
        kind, _, r = k.partition("@")
        order = ["insert", "delete", "substitute", "edit", "reorder", "boilerplate"]
        return (order.index(kind) if kind in order else len(order), kind, float(r) if r else 0.0)

    return sorted(keys, key=key)


def _configs(lang_entry: dict[str, Any]) -> list[str]:
    cfgs = list((lang_entry.get("configs") or {}).keys())
    known = [c for c in CONFIG_ORDER if c in cfgs]
    return known + [c for c in cfgs if c not in known]


def _at(curve: Any, t: int) -> Any:
    return curve[t] if isinstance(curve, list) and len(curve) > t else None


def _quality_section(results: dict[str, Any], plots: dict[str, str]) -> str:
    lines = ["## Duplicate-detection quality", ""]
    q = results.get("quality")
    if not q or not q.get("languages"):
        return "\n".join([*lines, NOT_MEASURED])
    lines += [
        "Planted pairs on real man pages (`benchmarks/edits.py`): each document of a random half of the corpus "
        "against an edited copy (word insertions, deletions, substitutions, mixed edits at 1-20% of its words; "
        "two paragraphs swapped; wrapped in site boilerplate), and negatives: same-family pages (`hard`: "
        "`pthread_*`, `git-*`...) and unrelated pages, plus random pairs of distinct documents. "
        "A pair is called a duplicate when its Hamming distance is at most the threshold. "
        "The `idf` table is fitted on the other half of the corpus. Configurations:",
        "",
    ]
    described: dict[str, str] = {}
    for lang_entry in q["languages"].values():
        for name, c in (lang_entry.get("configs") or {}).items():
            described.setdefault(name, c.get("config", ""))
    for name in [c for c in CONFIG_ORDER if c in described] + [c for c in described if c not in CONFIG_ORDER]:
        lines.append(f"- `{name}`: {described[name]}")
    lines.append("")
    names = {"en": "English", "zh": "Chinese"}
    for lang, entry in q["languages"].items():
        cfgs = _configs(entry)
        if not cfgs:
            continue
        title = names.get(lang, lang)
        lines += [
            f"### {title}",
            "",
            f"{entry.get('documents', '–')} documents; {entry.get('pair_documents', '–')} give the pairs "
            f"({entry.get('per_kind', '–')} positives per kind and rate), {entry.get('idf_documents', '–')} fit the IDF table; "
            f"{num(entry.get('random_pairs'))} random pairs.",
            "",
            "**Recall within 3 bits** (share of planted near-duplicates found at `max_distance=3`):",
            "",
        ]
        groups = _kind_order({g for c in cfgs for g in (entry["configs"][c].get("recall") or {})})
        rows = []
        for g in groups:
            counts = (entry.get("positives") or {}).get(g)
            rows.append([g.replace("@", " @ "), str(counts) if counts is not None else "–",
                         *(pct(_at(_get(entry, "configs", c, "recall", g), 3)) for c in cfgs)])  # fmt: skip
        rows.append(["**all positives**", str(sum((entry.get("positives") or {}).values()) or "–"),
                     *(pct(_at(_get(entry, "configs", c, "recall_all"), 3)) for c in cfgs)])  # fmt: skip
        lines.append(table(["edit", "pairs", *(f"`{c}`" for c in cfgs)], rows))
        lines += ["", "**Recall by edit rate** (insert, delete, substitute and mixed edits pooled), within 3 and within 7 bits:", ""]
        rows = []
        for r in q.get("rates") or []:
            key = f"{r:g}"
            rows.append([pct(r), *(f"{pct(_at(_get(entry, 'configs', c, 'recall_by_rate', key), 3))} / "
                                    f"{pct(_at(_get(entry, 'configs', c, 'recall_by_rate', key), 7))}" for c in cfgs)])  # fmt: skip
        if rows:
            lines.append(table(["edit rate", *(f"`{c}` ≤3 / ≤7" for c in cfgs)], rows))
        lines += [
            "",
            "**False positives and bit balance.** FP rate = share of negative pairs within the threshold "
            "(`random` counts in parentheses). Bit entropy is summed over the 64 bits across the documents "
            "(64 is ideal; low values mean near-constant bits); block collisions is how often two random "
            "documents share a 16-bit block, over the uniform 2^-16 (the block index's bucket skew).",
            "",
        ]
        rows = []
        for c in cfgs:
            ce = entry["configs"][c]
            fp = ce.get("fp_rate") or {}
            counts = ce.get("fp_count_random_pairs") or []
            cells = [f"`{c}`"]
            for t in QUALITY_THRESHOLDS:
                cells += [rate(_at(fp.get("hard_negative"), t)), rate(_at(fp.get("unrelated"), t)),
                          f"{rate(_at(fp.get('random_pairs'), t))} ({_at(counts, t) if _at(counts, t) is not None else '–'})"]  # fmt: skip
            cells += [
                num(_get(ce, "random_distance", "mean")),
                num(_get(ce, "random_distance", "min")),
                num(ce.get("bit_entropy")),
                ratio(ce.get("block_collision_vs_uniform")),
            ]
            rows.append(cells)
        lines.append(
            table(
                ["config", "hard ≤3", "unrelated ≤3", "random ≤3", "hard ≤7", "unrelated ≤7", "random ≤7",
                 "random mean dist.", "random min", "bit entropy", "block collisions"],
                rows,
            )  # fmt: skip
        )
        skipped = [f"`{c}`: {entry['configs'][c]['note']}" for c in cfgs if entry["configs"][c].get("note")]
        if skipped:
            lines += ["", *skipped]
        if lang in plots:
            lines += ["", f"![{title}: recall, false positives and precision vs threshold]({plots[lang]})"]
        lines.append("")
    if q.get("note"):
        lines += [f"Note: {q['note']}"]
    return "\n".join(lines).rstrip()


def _ingest_section(results: dict[str, Any]) -> str:
    lines = ["## Ingest: backfill, load and lock stalls", ""]
    i = results.get("ingest")
    if not i:
        return "\n".join([*lines, NOT_MEASURED])
    rows = []
    if _is_num(i.get("load_rows_per_second")):
        rows.append(["COPY of article-length rows (text, no fingerprint)", num(i.get("load_rows")), num(i["load_rows_per_second"])])
    for key, label in (("backfill", "simsql backfill, parallel workers"), ("backfill_single_process", "simsql backfill, one process")):
        b = i.get(key)
        if b:
            workers = b.get("workers")
            label += f" (workers={workers})" if workers is not None else " (default workers)"
            rows.append([label, num(b.get("rows")), num(b.get("rows_per_second"))])
    if rows:
        lines.append(table(["step", "rows", "rows/s"], rows, "lrr"))
    s = i.get("lock_stalls")
    lines += ["", "### Lock stalls", ""]
    if not s:
        lines.append(NOT_MEASURED)
    else:
        lines += [
            f"A reader (`SELECT` by primary key) and a writer (`UPDATE` by primary key) loop on a "
            f"{num(s.get('rows'))}-row table while it changes; the worst single statement is the stall the "
            "application would feel. The naive migration adds a `GENERATED ALWAYS ... STORED` column, "
            "which rewrites the table under an exclusive lock.",
            "",
        ]
        base = s.get("baseline") or {}
        sim = s.get("simsql") or {}
        naive = s.get("naive_generated_column") or {}
        rows = [
            ["baseline (nothing running)", num(base.get("reader_worst_ms")), num(base.get("writer_worst_ms")), "–"],
            ["simsql attach + index + backfill", num(sim.get("reader_worst_ms")), num(sim.get("writer_worst_ms")),
             num(sim.get("total_seconds"))],
            ["naive GENERATED STORED column", num(naive.get("reader_worst_ms")), num(naive.get("writer_worst_ms")),
             num(naive.get("seconds"))],
        ]  # fmt: skip
        lines.append(table(["phase", "reader worst ms", "writer worst ms", "phase seconds"], rows, "lrrr"))
        if _is_num(sim.get("rows_per_second")):
            lines += ["", f"Backfill rate during the stall test: {num(sim['rows_per_second'])} rows/s "
                      f"({num(sim.get('reader_statements'))} reads and {num(sim.get('writer_statements'))} writes "
                      f"completed meanwhile, {sim.get('errors', 0)} errors)."]  # fmt: skip
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Headline
# --------------------------------------------------------------------------------------------


def _largest_with(results: dict[str, Any], workload: str, system: str) -> str | None:
    for n in reversed(_sizes(results)):
        if _is_num(_get(results, "queries", n, "workloads", workload, "systems", system, "p50_ms")):
            return n
    return None


def headline(results: dict[str, Any]) -> str:
    """The README's performance table: p50 latencies at the largest N measured, with ratios."""
    sizes = _sizes(results)
    lines: list[str] = []
    if sizes:
        largest = sizes[-1]
        systems = [
            ("simsql", "simsql"),
            ("plain scan", "plain scan (`ORDER BY bit_count(fp # q)`)"),
            ("pgvector HNSW ef_search=40", "pgvector HNSW (ef_search=40)"),
            ("simhash package", "simhash package (in memory)"),
        ]
        header = ["system"]
        workloads = [w for w, _ in WORKLOADS]
        header += [f"{w} p50" for w in workloads]
        rows = []
        for key, label in systems:
            cells = [label]
            any_value = False
            for w in workloads:
                n = largest if _is_num(_get(results, "queries", largest, "workloads", w, "systems", key, "p50_ms")) else _largest_with(results, w, key)
                if n is None:
                    cells.append("–")
                    continue
                r = results["queries"][n]["workloads"][w]["systems"][key]
                base = _get(results, "queries", n, "workloads", w, "systems", "simsql", "p50_ms")
                cell = f"{num(r['p50_ms'])} ms"
                if key != "simsql":
                    rel = _div(r["p50_ms"], base)
                    if rel is not None:
                        cell += f" ({ratio(rel)})"
                if _is_num(r.get("recall")) and r["recall"] < 0.995:
                    cell += f", recall {pct(r['recall'])}"
                if n != largest:
                    cell += f" at N={n_label(n)}"
                cells.append(cell)
                any_value = True
            if any_value:
                rows.append(cells)
        lines.append(f"Latency p50 at N={n_label(largest)} rows (in parentheses: times simsql's p50 at the same N):")
        lines.append("")
        lines.append(table(header, rows))
    else:
        lines.append("Query latency: not measured in this run.")
    extras = []
    en = _get(results, "fingerprint", "en")
    if en:
        extras.append(
            f"fingerprinting {num(_get(en, 'simsql', 'mb_per_second'))} MB/s of English text on one core "
            f"({ratio(en.get('ratio_simsql_to_simhash'))} the simhash package)"
        )
    zh = _get(results, "fingerprint", "zh")
    if zh:
        extras.append(f"{num(_get(zh, 'simsql', 'mb_per_second'))} MB/s of Chinese (jieba)")
    backfill = _get(results, "ingest", "backfill")
    if backfill:
        extras.append(f"backfill {num(backfill.get('rows_per_second'))} article-length rows/s")
    if extras:
        lines += ["", "Throughput: " + "; ".join(extras) + "."]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _latency_plots(results: dict[str, Any], plots_dir: Path, plt: Any) -> dict[str, Path]:
    out: dict[str, Path] = {}
    sizes = _sizes(results)
    for workload, title in WORKLOADS:
        series: dict[str, tuple[list[int], list[float]]] = {}
        for n in sizes:
            for s, r in (_get(results, "queries", n, "workloads", workload, "systems") or {}).items():
                y = r.get("p50_ms")
                label = s
                if not _is_num(y) and _is_num(r.get("qps")):
                    y, label = 1000.0 / r["qps"], f"{s} (batched, ms per query)"
                if _is_num(y) and y > 0:
                    series.setdefault(label, ([], []))
                    series[label][0].append(int(n))
                    series[label][1].append(float(y))
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label in sorted(series, key=lambda s: (SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 99, s)):
            xs, ys = series[label]
            ax.plot(xs, ys, marker="o", label=label, linewidth=2.2 if label == "simsql" else 1.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows (N)")
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title(f"{workload}: p50 latency vs table size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = plots_dir / f"latency_{_slug(workload)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out[workload] = path
    return out


def _quality_plots(results: dict[str, Any], plots_dir: Path, plt: Any) -> dict[str, Path]:
    out: dict[str, Path] = {}
    q = results.get("quality") or {}
    thresholds = q.get("thresholds") or list(range(13))
    names = {"en": "English", "zh": "Chinese"}
    for lang, entry in (q.get("languages") or {}).items():
        cfgs = _configs(entry)
        if not cfgs:
            continue
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        for c in cfgs:
            ce = entry["configs"][c]
            width = 2.2 if c == "default" else 1.2
            recall = ce.get("recall_all")
            if recall:
                axes[0].plot(thresholds[: len(recall)], recall, marker=".", label=c, linewidth=width)
            fp = _get(ce, "fp_rate", "random_pairs")
            if fp:
                axes[1].plot(thresholds[: len(fp)], fp, marker=".", label=c, linewidth=width)
            prec = ce.get("precision_at_prior")
            if prec:
                xs = [t for t, p in zip(thresholds, prec) if p is not None]
                ys = [p for p in prec if p is not None]
                axes[2].plot(xs, ys, marker=".", label=c, linewidth=width)
        axes[0].set_title("recall (all planted positives)")
        axes[1].set_title("false-positive rate (random pairs)")
        axes[1].set_yscale("symlog", linthresh=1e-5)
        prior = q.get("prior", 1e-3)
        axes[2].set_title(f"precision with 1 duplicate per {1 / prior:,.0f} pairs")
        for ax in axes:
            ax.set_xlabel("threshold (max Hamming distance)")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylim(0, 1.02)
        axes[2].set_ylim(0, 1.02)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{names.get(lang, lang)}: duplicate detection vs threshold")
        fig.tight_layout()
        path = plots_dir / f"quality_{_slug(lang)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out[lang] = path
    return out


# --------------------------------------------------------------------------------------------
# Real-text latency (issue 8): the ``latency`` section, one entry per configuration and size
# --------------------------------------------------------------------------------------------

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
        systems = _get(entry, "workloads", workload, "systems") or {}
        for name, r in systems.items():
            scan = _get(systems, _scan_of(name), "p50_ms")
            scan99 = _get(systems, _scan_of(name), "p99_ms")
            is_scan = name.startswith("plain scan")
            like = r.get("same_queries_as_scan") or r  # ratios on the queries the scan answered
            rows.append([
                workload, name, num(r.get("p50_ms")), num(r.get("p99_ms")), pct(r.get("recall")),
                "1×" if is_scan else ratio(_div(scan, like.get("p50_ms"))),
                "1×" if is_scan else ratio(_div(scan99, like.get("p99_ms"))),
                str(r.get("timings", "")),
            ])  # fmt: skip
    return rows


def _equal_latency_rows(entry: dict[str, Any]) -> list[list[str]]:
    """Each approximate simsql radius beside the pgvector ``ef_search`` of nearest p50."""
    rows = []
    for workload in ("top-10 clustered", "top-10 spread"):
        systems = _get(entry, "workloads", workload, "systems") or {}
        vectors = {k: v for k, v in systems.items() if k.startswith("pgvector")}
        for name, r in systems.items():
            if not name.startswith("simsql approximate") or not vectors or not _is_num(r.get("p50_ms")):
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
            quantiles = {w: _get(entry, "workloads", w, "kth_distance_quantiles") for w, _ in LATENCY_WORKLOADS}
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
    return f"{num(r.get(key))} ms ({ratio(_div(_get(systems, _scan_of(name), key), like.get(key)))})"


def latency_headline(results: dict[str, Any]) -> str:
    """The README's real-text table: the questions issue 8 asks, p50 (× the plain scan), with a
    ``find_original`` column for each threshold the run measured."""
    entries = [
        (config, n, entry)
        for config, sizes in (results.get("latency") or {}).items()
        for n, entry in sorted(sizes.items(), key=lambda kv: int(kv[0]))
    ]
    found = re.compile(r"simsql find_original \((\d+) bits\)")
    thresholds = sorted({
        int(m.group(1)) for _, _, entry in entries
        for name in (_get(entry, "workloads", "top-10 spread", "systems") or {}) if (m := found.fullmatch(name))
    })  # fmt: skip
    rows = []
    for config, n, entry in entries:
        near = _get(entry, "workloads", "near-dup", "systems") or {}
        spread = _get(entry, "workloads", "top-10 spread", "systems") or {}
        clustered = _get(entry, "workloads", "top-10 clustered", "systems") or {}
        rows.append([
            f"`{config}`", n_label(n), num(_get(entry, "bits", "bucket_seen_by_a_row_vs_uniform")) + "×",
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


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def render(results: dict[str, Any], plot_links: dict[str, str] | None = None) -> str:
    """The whole markdown document (plots linked when ``plot_links`` names them)."""
    plots = plot_links or {}
    parts = [
        "# Benchmarks",
        "",
        "Generated by `python -m benchmarks.report` from the results JSON of one run of "
        "`python -m benchmarks`; do not edit by hand, re-run instead.",
        "",
        "## Summary",
        "",
        headline(results),
        "",
        _machine_section(results),
        "",
        _query_section(results, plots),
        "",
        latency_section(results),
        "",
        _index_section(results),
        "",
        _dedup_section(results),
        "",
        _fingerprint_section(results),
        "",
        _quality_section(results, plots),
        "",
        _ingest_section(results),
        "",
    ]
    return "\n".join(parts)


def write(results: dict[str, Any], markdown_path: Path, plots_dir: Path) -> None:
    """Write ``markdown_path`` and the PNG plots in ``plots_dir`` from ``results``."""
    markdown_path = Path(markdown_path)
    plots_dir = Path(plots_dir)
    links: dict[str, str] = {}
    plt = _pyplot()
    if plt is not None:
        plots_dir.mkdir(parents=True, exist_ok=True)
        paths = {**_latency_plots(results, plots_dir, plt), **_quality_plots(results, plots_dir, plt)}
        base = markdown_path.resolve().parent
        links = {k: Path(os.path.relpath(p.resolve(), base)).as_posix() for k, p in paths.items()}
    text = render(results, links)
    if plt is None:
        text += "\n_Plots not drawn: matplotlib is not installed (`pip install -e .[bench]`)._\n"
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    kept = _maintained_elsewhere(markdown_path)
    markdown_path.write_text(text.rstrip("\n") + "\n\n" + kept if kept else text, encoding="utf-8")


_FIRST_MARKER = re.compile(r"^<!-- [\w-]+:start -->$", re.MULTILINE)


def _maintained_elsewhere(markdown_path: Path) -> str:
    """The part of an existing BENCHMARKS.md this report does not own: everything from the first
    ``<!-- name:start -->`` marker on (originality, balance, MySQL: written by other scripts or by
    hand), kept as it is so that re-rendering one results file cannot wipe them."""
    if not markdown_path.exists():
        return ""
    existing = markdown_path.read_text(encoding="utf-8")
    marker = _FIRST_MARKER.search(existing)
    return existing[marker.start():] if marker else ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("results", nargs="+", help="results JSON file(s); later files add or replace sections")
    parser.add_argument("--markdown", default=str(ROOT.parent / "BENCHMARKS.md"))
    parser.add_argument("--plots", default=str(ROOT / "plots"))
    parser.add_argument("--headline", action="store_true", help="only print the README table")
    parser.add_argument("--latency-headline", action="store_true", help="only print the README's real-text latency table")
    parser.add_argument("--latency-section", action="store_true",
                        help="only print the real-text latency section (for a marked section of BENCHMARKS.md)")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    for name in args.results:
        path = Path(name)
        if not path.exists() and (ROOT / name).exists():
            path = ROOT / name
        loaded = json.loads(path.read_text(encoding="utf-8"))
        latency = loaded.pop("latency", None)
        for config, sizes in (latency or {}).items():
            results.setdefault("latency", {}).setdefault(config, {}).update(sizes)
        if latency is not None and not set(loaded) & {"fingerprint", "quality", "queries", "ingest"}:
            continue  # a latency-only run adds its configurations, not its machine or command
        results.update(loaded)
    if args.headline:
        print(headline(results))
        return 0
    if args.latency_headline:
        print(latency_headline(results))
        return 0
    if args.latency_section:
        print(latency_section(results))
        return 0
    write(results, Path(args.markdown), Path(args.plots))
    print(f"wrote {args.markdown} and plots in {args.plots}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
