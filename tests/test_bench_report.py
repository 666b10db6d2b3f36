"""BENCHMARKS.md is rendered from results alone, and partial runs render without crashing."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import report

ROOT = Path(__file__).resolve().parents[1]


def test_full_results_render_every_section(tmp_path: Path) -> None:
    results = json.loads((ROOT / "benchmarks" / "results" / "full.json").read_text())
    markdown = tmp_path / "B.md"
    report.write(results, markdown, tmp_path / "plots")
    text = markdown.read_text()
    near = results["queries"]["1000000"]["workloads"]["near-dup"]["systems"]
    assert f"{near['simsql']['p50_ms']:.2f}" in text
    assert "pgvector HNSW ef_search=40" in text
    assert "Lock stalls" in text
    assert f"{results['fingerprint']['english']['simsql_mb_s']:.2f}" in text
    assert "| N | workload |" in report.headline(results)


def test_partial_results_say_not_measured(tmp_path: Path) -> None:
    results = {"machine": {"cores": 2}, "command": "python -m benchmarks --sections quality"}
    markdown = tmp_path / "B.md"
    report.write(results, markdown, tmp_path / "plots")
    text = markdown.read_text()
    assert text.count("Not measured in this run") >= 3
    assert "not measured" in report.headline(results).lower()
