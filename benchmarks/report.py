"""Render ``BENCHMARKS.md`` and its plots from a results dict (what ``python -m benchmarks`` saves).

Every figure in BENCHMARKS.md and in the README's performance table comes from here, so
``python -m benchmarks.report benchmarks/results/full.json`` re-renders them from a saved run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SYSTEM_ORDER = [
    "simsql",
    "plain scan",
    "pgvector HNSW ef_search=40",
    "pgvector HNSW ef_search=200",
    "simhash package",
]
WORKLOADS = ["near-dup", "top-10 clustered", "top-10 spread"]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _ratio(value: float | None, reference: float | None) -> str:
    if not value or not reference:
        return "-"
    return f"{value / reference:.1f}x"


def _num(value: float | None, spec: str) -> str:
    return "not run" if value is None else format(value, spec)


def _sizes(results: dict[str, Any]) -> list[str]:
    return sorted(results.get("queries", {}), key=int)


def headline(results: dict[str, Any]) -> str:
    """The README's performance table: the largest N with every peer, plus the largest N."""
    sizes = _sizes(results)
    if not sizes:
        return "_Query benchmarks not measured in this run._"
    lines = [
        "| N | workload | simsql p50 | plain scan p50 | pgvector HNSW p50 (recall) | simhash package p50 | simsql vs scan |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        for workload in WORKLOADS:
            systems = results["queries"][size].get("workloads", {}).get(workload, {}).get("systems", {})
            if not systems:
                continue
            ours = systems.get("simsql", {}).get("p50_ms")
            scan = systems.get("plain scan", {}).get("p50_ms")
            vector = systems.get("pgvector HNSW ef_search=40")
            vector_text = f"{_ms(vector['p50_ms'])} ms ({vector['recall']:.2f})" if vector else "not built"
            package = systems.get("simhash package")
            package_text = f"{_ms(package['p50_ms'])} ms" if package else "-"
            lines.append(
                f"| {int(size):,} | {workload} | **{_ms(ours)} ms** (recall 1.00) | {_ms(scan)} ms | {vector_text} | "
                f"{package_text} | {_ratio(scan, ours)} faster |"
            )
    extra = []
    fingerprint = results.get("fingerprint")
    if fingerprint:
        en = fingerprint["english"]
        extra.append(
            f"Fingerprinting: {en['simsql_mb_s']:.1f} MB/s of English on one core "
            f"({en.get('ratio', 0):.1f}x the `simhash` package on the same documents); "
            f"Chinese {fingerprint['chinese']['simsql_mb_s']:.2f} MB/s "
            f"({fingerprint['chinese'].get('simsql_vs_jieba', 0):.2f}x `jieba.lcut` alone)."
        )
    ingest = results.get("ingest")
    if ingest and "backfill" in ingest:
        extra.append(
            f"Backfill of article-length rows: {ingest['backfill']['rows_per_second']:,.0f} rows/s end to end."
        )
    return "\n".join(lines) + ("\n\n" + " ".join(extra) if extra else "")


def _query_tables(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for size in _sizes(results):
        entry = results["queries"][size]
        out.append(f"### N = {int(size):,}\n")
        out.append(
            f"Fingerprints generated from real paragraphs in {entry.get('generate_seconds', 0):.0f} s; "
            f"sampled fingerprints equal to `simsql.simhash` of the assembled text: {entry.get('verified', '-')}.\n"
        )
        for workload in WORKLOADS:
            data = entry.get("workloads", {}).get(workload)
            if not data:
                continue
            systems = data["systems"]
            ours = systems.get("simsql", {}).get("p50_ms")
            out.append(
                f"**{workload}** (10th neighbour within 11 bits for {data['kth_within_11_bits']:.0%} of queries; "
                f"median 10th-neighbour distance {data['median_kth_distance']} bits)\n"
            )
            out.append("| system | p50 ms | p99 ms | queries/s | recall | p50 vs simsql |")
            out.append("|---|---|---|---|---|---|")
            names = [n for n in SYSTEM_ORDER if n in systems] + [n for n in systems if n not in SYSTEM_ORDER]
            for name in names:
                row = systems[name]
                if "p50_ms" not in row:
                    out.append(f"| {name} (batched, one round trip) | - | - | {row['qps']:,.0f} | {row['recall']:.3f} | - |")
                    continue
                out.append(
                    f"| {name} | {_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | {row['qps']:,.0f} | {row['recall']:.3f} | "
                    f"{_ratio(row['p50_ms'], ours)} |"
                )
            out.append("")
    return out


def _build_table(results: dict[str, Any]) -> list[str]:
    out = ["| N | simsql index build s | simsql bytes/row | pgvector HNSW build s | pgvector bytes/row | simhash package build s | simhash package bytes/row (Python heap) | simsql load rows/s |", "|---|---|---|---|---|---|---|---|"]
    for size in _sizes(results):
        entry = results["queries"][size]
        ours = entry.get("simsql_load", {})
        vector = entry.get("pgvector_load") or {}
        package = entry.get("workloads", {}).get("near-dup", {}).get("systems", {}).get("simhash package", {})
        vector_build = f"{vector['index_build_seconds']:.1f}" if "index_build_seconds" in vector else entry.get("pgvector_note", "-")
        out.append(
            f"| {int(size):,} | {ours.get('index_build_seconds', 0):.2f} | {ours.get('bytes_per_row', 0):.0f} | {vector_build} | "
            f"{vector.get('bytes_per_row', 0):.0f} | {_num(package.get('index_build_seconds'), '.1f')} | "
            f"{_num(package.get('bytes_per_row'), '.0f')} | {ours.get('load_rows_per_second', 0):,.0f} |"
        )
    out.append("")
    out.append("| N | simsql `near_duplicates` s | pairs | simhash package all-pairs s |")
    out.append("|---|---|---|---|")
    for size in _sizes(results):
        dedup = results["queries"][size].get("dedup")
        if not dedup:
            continue
        ours = dedup.get("simsql near_duplicates", {})
        package = dedup.get("simhash package all-pairs")
        package_text = f"{package['seconds']:.1f} ({package['pairs']:,} pairs)" if package else "not run"
        out.append(f"| {int(size):,} | {ours.get('seconds', 0):.1f} | {ours.get('pairs', 0):,} | {package_text} |")
    return out


def _fingerprint_section(results: dict[str, Any]) -> list[str]:
    data = results.get("fingerprint")
    if not data:
        return ["_Not measured in this run._"]
    out = ["| language | documents | MB | simsql MB/s | simsql docs/s | simhash package MB/s | simsql / package (same documents) | jieba.lcut MB/s |", "|---|---|---|---|---|---|---|---|"]
    for lang in ("english", "chinese"):
        row = data[lang]
        jieba = f"{row['jieba_lcut_mb_s']:.2f}" if row.get("jieba_lcut_mb_s") else "-"
        out.append(
            f"| {lang} | {row['documents']:,} | {row['mb']:.1f} | {row['simsql_mb_s']:.2f} | {row['simsql_docs_s']:,.0f} | "
            f"{row.get('simhash_package_mb_s') or 0:.2f} | {row.get('ratio', 0):.2f}x | {jieba} |"
        )
    out.append("")
    out += [f"- {lang}: {data[lang]['note']}" for lang in ("english", "chinese")]
    return out


def _quality_section(results: dict[str, Any]) -> list[str]:
    data = results.get("quality")
    if not data:
        return ["_Not measured in this run._"]
    out: list[str] = []
    for lang in ("english", "chinese"):
        configs = data[lang]["configs"]
        kinds = list(next(iter(configs.values()))["recall"])
        shown = [k for k in kinds if k.startswith("edit") or k in ("reorder", "boilerplate")]
        out.append(f"**{lang.title()}**: {data[lang]['documents']} documents, {data[lang]['pairs_per_kind']} pairs per kind; recall within 3 bits:\n")
        out.append("| configuration | " + " | ".join(shown) + " | FP ≤3 random | FP ≤7 random | FP ≤3 hard | mean distance unrelated | bit entropy (of 64) |")
        out.append("|---|" + "---|" * (len(shown) + 5))
        for name, entry in configs.items():
            recall = [f"{entry['recall'][k]['3']:.2f}" if isinstance(entry["recall"][k], dict) and "3" in entry["recall"][k] else f"{entry['recall'][k][3]:.2f}" for k in shown]
            fp = entry["false_positive"]

            def at(rates: dict[Any, float], t: int) -> float:
                return rates.get(t, rates.get(str(t), 0.0))

            out.append(
                f"| {name} | " + " | ".join(recall) + f" | {at(fp['random pairs'], 3):.5f} | {at(fp['random pairs'], 7):.4f} | "
                f"{at(fp.get('hard_negative', {}), 3):.3f} | {entry['unrelated_mean_distance']:.1f} | {entry['bit_entropy']:.1f} |"
            )
        out.append("")
    return out


def _ingest_section(results: dict[str, Any]) -> list[str]:
    data = results.get("ingest")
    if not data:
        return ["_Not measured in this run._"]
    out = [
        f"- Legacy table load (COPY, article-length rows): {data['load_rows_per_second']:,.0f} rows/s.",
        f"- Attach + backfill of {data['backfill']['rows']:,} article-length rows: **{data['backfill']['rows_per_second']:,.0f} rows/s** "
        f"with worker processes (backfill {data['backfill']['backfill_seconds']:.1f} s); "
        f"{data['backfill_single_process']['rows_per_second']:,.0f} rows/s in a single process.",
    ]
    stalls = data.get("lock_stalls")
    if stalls:
        s = stalls["simsql"]
        n = stalls["naive_generated_column"]
        out += [
            "",
            f"Lock stalls on a {stalls['rows']:,}-row table under a concurrent reader (point selects) and writer (point updates):",
            "",
            "| phase | duration s | reader worst ms | writer worst ms |",
            "|---|---|---|---|",
            f"| baseline (nothing running) | - | {stalls['baseline']['reader_worst_ms']:.1f} | {stalls['baseline']['writer_worst_ms']:.1f} |",
            f"| simsql attach ({s['attach_seconds']:.2f} s) + concurrent indexes ({s['index_seconds']:.1f} s) + backfill ({s['backfill_seconds']:.1f} s, {s['rows_per_second']:,.0f} rows/s) | {s['total_seconds']:.1f} | {s['reader_worst_ms']:.0f} | {s['writer_worst_ms']:.0f} |",
            f"| naive `ADD COLUMN ... GENERATED ALWAYS AS (...) STORED` (table rewrite) | {n['seconds']:.1f} | {n['reader_worst_ms']:.0f} | {n['writer_worst_ms']:.0f} |",
            "",
            f"{s['reader_statements']:,} reads and {s['writer_statements']:,} writes completed during the simsql phase, {s['errors']} failed.",
        ]
    return out


def _plots(results: dict[str, Any], plots_dir: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["_matplotlib is not installed (pip install -e '.[bench]'): no plots._"]
    plots_dir.mkdir(parents=True, exist_ok=True)
    links: list[str] = []
    sizes = _sizes(results)
    for workload in WORKLOADS:
        series: dict[str, tuple[list[int], list[float]]] = {}
        for size in sizes:
            systems = results["queries"][size].get("workloads", {}).get(workload, {}).get("systems", {})
            for name, row in systems.items():
                if "p50_ms" in row:
                    series.setdefault(name, ([], []))
                    series[name][0].append(int(size))
                    series[name][1].append(row["p50_ms"])
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows (N)")
        ax.set_ylabel("p50 latency, ms (caller side)")
        ax.set_title(f"{workload}")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        name = f"latency-{workload.replace(' ', '-')}.png"
        fig.tight_layout()
        fig.savefig(plots_dir / name, dpi=110)
        plt.close(fig)
        links.append(f"![{workload} latency vs N](benchmarks/plots/{name})")
    quality = results.get("quality")
    if quality:
        for lang in ("english", "chinese"):
            fig, ax = plt.subplots(figsize=(6, 4))
            for name, entry in quality[lang]["configs"].items():
                recall = entry["recall"].get("edit 2%") or next(iter(entry["recall"].values()))
                fp = entry["false_positive"]["random pairs"]
                ts = sorted(int(t) for t in recall)
                ax.plot(ts, [recall.get(t, recall.get(str(t))) for t in ts], marker=".", label=f"{name}: recall (2% edits)")
                ax.plot(ts, [fp.get(t, fp.get(str(t))) for t in ts], linestyle="--", label=f"{name}: FP (random pairs)")
            ax.set_xlabel("threshold (bits)")
            ax.set_ylabel("rate")
            ax.set_title(f"{lang}: recall and false positives vs threshold")
            ax.legend(fontsize=5)
            ax.grid(True, alpha=0.3)
            name = f"quality-{lang}.png"
            fig.tight_layout()
            fig.savefig(plots_dir / name, dpi=110)
            plt.close(fig)
            links.append(f"![{lang} quality](benchmarks/plots/{name})")
    return links


def render(results: dict[str, Any], plots_dir: Path) -> str:
    machine = results.get("machine", {})
    lines = [
        "# simsql benchmarks",
        "",
        "Generated by `benchmarks/report.py` from one run of the benchmark suite; do not edit by hand.",
        "",
        f"Command: `{results.get('command', 'python -m benchmarks')}`",
        "",
        "Machine: " + ", ".join(f"{k}: {v}" for k, v in machine.items()),
        "",
        "## Headline",
        "",
        headline(results),
        "",
        "## Query latency (caller side: Python, SQLAlchemy, psycopg, local socket)",
        "",
        "Systems answer the same queries on the same fingerprints in the same PostgreSQL. Queries are new articles "
        "(a variant of a stored article for near-dup; a variant of a 12-article series for clustered top-10; a new "
        "random article for spread top-10). pgvector HNSW and the simhash package are approximate or k=3 only; simsql "
        "and the scan are exact. Recall is against a brute-force numpy scan.",
        "",
        *_query_tables(results),
        "## Index build, size and whole-table deduplication",
        "",
        *_build_table(results),
        "",
        "## Fingerprint throughput (one core)",
        "",
        *_fingerprint_section(results),
        "",
        "## Quality: which configuration finds duplicates",
        "",
        *_quality_section(results),
        "## Ingest",
        "",
        *_ingest_section(results),
        "",
        "## Plots",
        "",
        *_plots(results, plots_dir),
        "",
    ]
    return "\n".join(lines)


def write(results: dict[str, Any], markdown_path: Path, plots_dir: Path) -> None:
    markdown_path.write_text(render(results, plots_dir), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if not args:
        print("usage: python -m benchmarks.report RESULTS.json [EXTRA.json ...]", file=sys.stderr)
        return 2
    results: dict[str, Any] = json.loads(Path(args[0]).read_text())
    root = Path(__file__).resolve().parent
    write(results, root.parent / "BENCHMARKS.md", root / "plots")
    print(headline(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
