"""Markdown tables of :mod:`benchmarks.lists` results, as BENCHMARKS.md shows them.

    python -m benchmarks.lists_report benchmarks/results/partitions-postgresql-1000000.json [...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _load(load: Sequence[float] | None) -> str:
    return "?" if not load else f"{load[0]:.1f}"


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


SHORT = {
    "plain scan (whole rows)": "plain scan",
    "plain scan (keys)": "keys scan",
    "simsql most_similar_vectors candidates=1000 (exact path)": "exact path c=1000",
    "simsql 256-bit scan top-1000 + rerank": "256-bit scan",
    "pgvector exact <=> scan": "pgvector exact",
}


def _systems(rows: dict[str, dict[str, Any]], baselines: Sequence[str]) -> list[str]:
    heads = [b for b in baselines if any(f"speedup_vs[{b}]" in r for r in rows.values())]
    out = ["| system | recall@10 | p25 ms | p50 ms | p99 ms | " + " | ".join(f"speed-up vs {SHORT.get(b, b)}" for b in heads) + " |"]
    out.append("| :-- | --: | --: | --: | --: | " + " | ".join("--:" for _ in heads) + " |")
    for name, row in rows.items():
        ratios = " | ".join(f"{row.get(f'speedup_vs[{b}]', 0):.2f}" for b in heads)
        out.append(f"| {name} | {row['recall@10']:.3f} | {_ms(row['p25_ms'])} | {_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | {ratios} |")
    return out


def render(report: dict[str, Any]) -> str:
    lines = [f"`{report['command']}` ({report['server']}, {report['rows']:,} rows, {report['queries']} queries)", ""]
    text = report.get("text")
    if text:
        for name, phase in text["phases"].items():
            fit = text.get("fits", {}).get(name, {})
            result = fit.get("result", {})
            lines.append(
                f"Text, {name} ({result.get('lists', '?')} lists, largest {result.get('largest_list', '?')}, median "
                f"{result.get('median_list', '?')}; fit {fit.get('seconds', '?')} s); load {_load(phase['load_average_before'])} "
                f"before, {_load(phase['load_average_after'])} after:"
            )
            lines.append("")
            lines += _systems(phase["systems"], ["plain scan (whole rows)", "plain scan (keys)"])
            lines.append("")
    vectors = report.get("vectors")
    if vectors:
        phase = vectors["phase"]
        fit = vectors.get("fit", {})
        result = fit.get("result", {})
        lines.append(
            f"Vectors ({result.get('lists', '?')} lists, largest {result.get('largest_list', '?')}, median {result.get('median_list', '?')}; "
            f"fit {fit.get('seconds', '?')} s); load {_load(phase['load_average_before'])} before, {_load(phase['load_average_after'])} after:"
        )
        lines.append("")
        baselines = ["simsql most_similar_vectors candidates=1000 (exact path)", "simsql 256-bit scan top-1000 + rerank", "pgvector exact <=> scan"]
        lines += _systems(phase["systems"], baselines)
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    for path in argv if argv is not None else sys.argv[1:]:
        print(render(json.loads(Path(path).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
