"""The sections of BENCHMARKS.md drawn from one run of ``python -m benchmarks``: summary, machine,
query latency at scale, index size, whole-table dedup, fingerprint throughput and ingest.

Each takes the results dict ``python -m benchmarks`` saves and returns markdown; a section whose
results are missing says "not measured in this run" rather than failing.
"""

from __future__ import annotations

from typing import Any

from .markdown import NOT_MEASURED, div, get, is_num, n_label, num, pct, ratio, table

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


def result_sizes(results: dict[str, Any]) -> list[str]:
    """The table sizes the ``queries`` section measured, smallest first."""
    queries = results.get("queries") or {}
    return sorted(queries, key=int)


def _systems(results: dict[str, Any], workload: str) -> list[str]:
    seen: list[str] = []
    for n in result_sizes(results):
        for s in get(results, "queries", n, "workloads", workload, "systems") or {}:
            if s not in seen:
                seen.append(s)
    known = [s for s in SYSTEM_ORDER if s in seen]
    return known + [s for s in seen if s not in known]


def machine_section(results: dict[str, Any]) -> str:
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


QUERY_NOTE = (
    "All systems answer the same queries on the same fingerprints in one PostgreSQL server, "
    "measured as the application sees them (Python, SQLAlchemy, psycopg, local socket). "
    "`vs simsql` is the system's p50 over simsql's (above 1× = slower than simsql); "
    "`faster than scan` is the plain scan's p50 over the system's. Recall is against exact "
    "Hamming distances (top-10 with ties: an answer counts when it is within the true 10th distance)."
)


def _query_rows(results: dict[str, Any], workload: str, systems: list[str]) -> tuple[list[list[str]], list[str]]:
    """One row per size and system, and a note per size on how far the 10th neighbour is."""
    rows, notes = [], []
    for n in result_sizes(results):
        entry = get(results, "queries", n, "workloads", workload)
        if not entry:
            continue
        sys_rows = entry.get("systems") or {}
        base = get(sys_rows, "simsql", "p50_ms")
        scan = get(sys_rows, "plain scan", "p50_ms")
        for s in systems:
            r = sys_rows.get(s)
            if r is None:
                continue
            p50 = r.get("p50_ms")
            queries = f" ({r['queries']} queries)" if s == "plain scan" and r.get("queries") else ""
            rows.append([
                n_label(n), s + queries, num(p50), num(r.get("p99_ms")), num(r.get("qps")), pct(r.get("recall")),
                ratio(div(p50, base)) if s != "simsql" else "1×",
                ratio(div(scan, p50)) if s != "plain scan" else "1×",
            ])  # fmt: skip
        kth = entry.get("kth_within_11_bits")
        med = entry.get("median_kth_distance")
        if is_num(kth) or is_num(med):
            notes.append(f"N={n_label(n)}: median 10th-neighbour distance {num(med)}, within 11 bits for {pct(kth)} of queries")
    return rows, notes


def _workload_block(results: dict[str, Any], workload: str, title: str, plots: dict[str, str]) -> list[str]:
    lines = [f"### {workload}: {title}", ""]
    systems = _systems(results, workload)
    if not systems:
        return [*lines, NOT_MEASURED, ""]
    rows, notes = _query_rows(results, workload, systems)
    lines.append(table(["N", "system", "p50 ms", "p99 ms", "qps", "recall", "vs simsql (p50)", "faster than scan"], rows, "llrrrrrr"))
    if workload == "near-dup":
        lines += [
            "",
            "`simsql most_similar_many` answers all the queries in one round trip (batched, for ingest "
            "pipelines): its qps is for the batch, it has no per-query latency.",
        ]
    if notes:
        lines += ["", "; ".join(notes) + "."]
    for n in result_sizes(results):
        note = get(results, "queries", n, "pgvector_note")
        if note:
            lines += ["", f"N={n_label(n)}: pgvector {note}."]
    if workload in plots:
        lines += ["", f"![{workload} p50 latency vs N]({plots[workload]})"]
    return [*lines, ""]


def query_section(results: dict[str, Any], plots: dict[str, str]) -> str:
    """Latency of every system at every size, one table per workload (and its plot)."""
    lines = ["## Query latency", ""]
    if not result_sizes(results):
        return "\n".join([*lines, NOT_MEASURED])
    lines += [QUERY_NOTE, ""]
    for workload, title in WORKLOADS:
        lines += _workload_block(results, workload, title, plots)
    return "\n".join(lines).rstrip()


def index_section(results: dict[str, Any]) -> str:
    lines = ["## Index build and size", ""]
    sizes = result_sizes(results)
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
                 ratio(div(v.get("index_build_seconds"), s.get("index_build_seconds"))) if built else "–",
                 num(v.get("bytes_per_row")), ratio(div(v.get("bytes_per_row"), s.get("bytes_per_row")))]
            )  # fmt: skip
        pkg = get(e, "workloads", "near-dup", "systems", "simhash package")
        if pkg:
            rows.append(
                [n_label(n), "simhash package SimhashIndex(k=3), in memory", "–", num(pkg.get("index_build_seconds")),
                 ratio(div(pkg.get("index_build_seconds"), s.get("index_build_seconds"))),
                 num(pkg.get("bytes_per_row")), ratio(div(pkg.get("bytes_per_row"), s.get("bytes_per_row")))]
            )  # fmt: skip
    lines.append(
        table(["N", "system", "load rows/s (COPY)", "index build s", "build vs simsql", "bytes/row", "size vs simsql"], rows, "llrrrrr")
    )
    return "\n".join(lines)


def dedup_section(results: dict[str, Any]) -> str:
    lines = ["## Whole-table deduplication (all pairs within 3 bits)", ""]
    rows = []
    for n in result_sizes(results):
        d = get(results, "queries", n, "dedup")
        if not d:
            continue
        base = get(d, "simsql near_duplicates", "seconds")
        for name, r in d.items():
            rows.append([n_label(n), name, num(r.get("seconds")), f"{r.get('pairs', '–'):,}" if is_num(r.get("pairs")) else "–",
                         ratio(div(r.get("seconds"), base)) if name != "simsql near_duplicates" else "1×"])  # fmt: skip
    if not rows:
        return "\n".join([*lines, NOT_MEASURED])
    lines.append(table(["N", "system", "seconds", "pairs", "time vs simsql"], rows, "llrrr"))
    return "\n".join(lines)


def fingerprint_section(results: dict[str, Any]) -> str:
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
                    num(r.get("docs_per_second")), ratio(div(r.get("mb_per_second"), (base or {}).get("mb_per_second"))) if base is not None else "1×"]  # fmt: skip

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
        r = get(f, lang, "ratio_simsql_to_simhash")
        if is_num(r):
            summary.append(f"{names[lang]}: simsql is {ratio(r)} the simhash package's throughput")
    r = get(f, "zh", "ratio_simsql_to_jieba_lcut")
    if is_num(r):
        summary.append(f"simsql on Chinese runs at {ratio(r)} the speed of `jieba.lcut` alone on the same text")
    if summary:
        lines += ["", "; ".join(summary) + "."]
    if f.get("note"):
        lines += ["", f"Note: {f['note']}"]
    if f.get("load_average_before"):
        lines += ["", f"Load average (1, 5, 15 min) before timing: {', '.join(num(x) for x in f['load_average_before'])}."]
    return "\n".join(lines)


def ingest_section(results: dict[str, Any]) -> str:
    lines = ["## Ingest: backfill, load and lock stalls", ""]
    i = results.get("ingest")
    if not i:
        return "\n".join([*lines, NOT_MEASURED])
    rows = []
    if is_num(i.get("load_rows_per_second")):
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
        if is_num(sim.get("rows_per_second")):
            lines += ["", f"Backfill rate during the stall test: {num(sim['rows_per_second'])} rows/s "
                      f"({num(sim.get('reader_statements'))} reads and {num(sim.get('writer_statements'))} writes "
                      f"completed meanwhile, {sim.get('errors', 0)} errors)."]  # fmt: skip
    return "\n".join(lines)


def _largest_with(results: dict[str, Any], workload: str, system: str) -> str | None:
    for n in reversed(result_sizes(results)):
        if is_num(get(results, "queries", n, "workloads", workload, "systems", system, "p50_ms")):
            return n
    return None


def headline(results: dict[str, Any]) -> str:
    """BENCHMARKS.md's summary table: p50 latencies at the largest N measured, with ratios."""
    sizes = result_sizes(results)
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
                n = largest if is_num(get(results, "queries", largest, "workloads", w, "systems", key, "p50_ms")) else _largest_with(results, w, key)
                if n is None:
                    cells.append("–")
                    continue
                r = results["queries"][n]["workloads"][w]["systems"][key]
                base = get(results, "queries", n, "workloads", w, "systems", "simsql", "p50_ms")
                cell = f"{num(r['p50_ms'])} ms"
                if key != "simsql":
                    rel = div(r["p50_ms"], base)
                    if rel is not None:
                        cell += f" ({ratio(rel)})"
                if is_num(r.get("recall")) and r["recall"] < 0.995:
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
    en = get(results, "fingerprint", "en")
    if en:
        extras.append(
            f"fingerprinting {num(get(en, 'simsql', 'mb_per_second'))} MB/s of English text on one core "
            f"({ratio(en.get('ratio_simsql_to_simhash'))} the simhash package)"
        )
    zh = get(results, "fingerprint", "zh")
    if zh:
        extras.append(f"{num(get(zh, 'simsql', 'mb_per_second'))} MB/s of Chinese (jieba)")
    backfill = get(results, "ingest", "backfill")
    if backfill:
        extras.append(f"backfill {num(backfill.get('rows_per_second'))} article-length rows/s")
    if extras:
        lines += ["", "Throughput: " + "; ".join(extras) + "."]
    return "\n".join(lines)
