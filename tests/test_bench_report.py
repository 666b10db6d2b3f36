"""BENCHMARKS.md is rendered from the results dict alone; partial runs render, never crash."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _latency(p50: float, recall: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {"p50_ms": p50, "p99_ms": p50 * 2, "mean_ms": p50 * 1.1, "qps": 1000 / p50, "recall": recall, **extra}


def _curve(at3: float, at7: float) -> list[float]:
    return [at3 * min(t, 3) / 3 if t <= 3 else at3 + (at7 - at3) * min(t - 3, 4) / 4 for t in range(13)]


def _quality_config(description: str, recall3: float, fp3: float, entropy: float) -> dict[str, Any]:
    return {
        "config": description,
        "recall": {"edit@0.02": _curve(recall3, 1.0), "boilerplate": _curve(0.25, 0.9)},
        "recall_by_rate": {"0.01": _curve(0.99, 1.0), "0.02": _curve(recall3, 1.0)},
        "recall_all": _curve(recall3 - 0.1, 0.97),
        "fp_rate": {"hard_negative": _curve(0.0, 0.0018), "unrelated": _curve(0.0, 0.0), "random_pairs": _curve(fp3, 0.011)},
        "fp_count_random_pairs": [round(x * 20000) for x in _curve(fp3, 0.011)],
        "random_distance": {"mean": 24.3 if fp3 == 0 else 18.9, "min": 5},
        "precision_at_prior": [1.0] * 13,
        "bit_entropy": entropy,
        "block_collision_vs_uniform": 35.0,
    }


def synthetic() -> dict[str, Any]:
    def workloads(scale: float, with_peers: bool) -> dict[str, Any]:
        near = {
            "simsql": _latency(2.11 * scale),
            "plain scan": _latency(80.07 * scale, queries=100),
            "simsql most_similar_many": {"qps": 2044.0, "recall": 1.0},
        }
        top = {"simsql": _latency(15.2 * scale), "plain scan": _latency(89.5 * scale, queries=100)}
        if with_peers:
            near["pgvector HNSW ef_search=40"] = _latency(7.49 * scale, recall=0.913)
            near["simhash package"] = _latency(8.51 * scale, index_build_seconds=67.7, bytes_per_row=553.3)
            top["pgvector HNSW ef_search=40"] = _latency(4.51 * scale, recall=0.972)
        return {
            "near-dup": {"systems": near, "kth_within_11_bits": 0.95, "median_kth_distance": 9.0},
            "top-10 clustered": {"systems": top, "kth_within_11_bits": 1.0, "median_kth_distance": 7.0},
            "top-10 spread": {"systems": dict(top), "kth_within_11_bits": 0.9, "median_kth_distance": 9.0},
        }

    return {
        "quick": False,
        "command": "python -m benchmarks --sizes 100000,1000000",
        "machine": {"cpu": "Test CPU 9000", "cores": 2, "python": "3.11.7", "simhash_package": "2.1.2"},
        "queries": {
            "100000": {
                "simsql_load": {"load_rows_per_second": 639412.0, "index_build_seconds": 0.19, "bytes_per_row": 249.1},
                "pgvector_load": {"index_build_seconds": 27.6, "bytes_per_row": 384.0},
                "workloads": workloads(0.5, True),
                "dedup": {
                    "simsql near_duplicates": {"seconds": 1.01, "pairs": 2760},
                    "simhash package all-pairs": {"seconds": 116.7, "pairs": 2760},
                },
            },
            "1000000": {
                "simsql_load": {"load_rows_per_second": 1071940.0, "index_build_seconds": 1.65, "bytes_per_row": 245.2},
                "pgvector_load": {"index_build_seconds": 272.2, "bytes_per_row": 384.4},
                "workloads": workloads(1.0, True),
            },
        },
        "fingerprint": {
            "timing": "best of 3 passes, one process, one core",
            "en": {
                "simsql": {"documents": 2504, "mb": 26.28, "mb_per_second": 19.95, "docs_per_second": 1900.0},
                "simsql_same_subset": {"documents": 2406, "mb": 16.64, "mb_per_second": 19.71, "docs_per_second": 2851.0},
                "simhash_package": {"documents": 2406, "mb": 16.64, "mb_per_second": 1.803, "docs_per_second": 260.8,
                                    "failed_documents": 98},  # fmt: skip
                "ratio_simsql_to_simhash": 10.93,
            },
            "zh": {
                "simsql": {"documents": 649, "mb": 3.78, "mb_per_second": 1.93, "docs_per_second": 331.0},
                "jieba_lcut": {"documents": 649, "mb": 3.78, "mb_per_second": 1.246, "docs_per_second": 214.0},
                "ratio_simsql_to_jieba_lcut": 1.549,
            },
            "note": "simhash 2.1.2 raised OverflowError on 98 documents",
        },
        "quality": {
            "thresholds": list(range(13)),
            "rates": [0.01, 0.02],
            "prior": 0.001,
            "languages": {
                "en": {
                    "documents": 2504,
                    "pair_documents": 1252,
                    "idf_documents": 1252,
                    "per_kind": 200,
                    "random_pairs": 100000,
                    "positives": {"edit@0.02": 200, "boilerplate": 200},
                    "configs": {
                        "default": _quality_config("Fingerprinter()", 0.915, 0.0, 51.7),
                        "count": _quality_config('Fingerprinter(weighting="count")', 0.975, 0.00029, 42.4),
                    },
                }
            },
        },
        "ingest": {
            "load_rows": 100000,
            "load_rows_per_second": 13712.9,
            "backfill": {"rows": 100000, "rows_per_second": 5239.3, "workers": None},
            "lock_stalls": {
                "rows": 1000000,
                "baseline": {"reader_worst_ms": 1.16, "writer_worst_ms": 1.45},
                "simsql": {"reader_worst_ms": 460.1, "writer_worst_ms": 592.8, "total_seconds": 55.3},
                "naive_generated_column": {"reader_worst_ms": 2004.3, "writer_worst_ms": 2004.2, "seconds": 2.2},
            },
        },
        "latency": {"default": {"1000000": _latency_entry()}},
    }


def _latency_entry() -> dict[str, Any]:
    """One configuration's real-text latencies (the ``latency`` section of a run)."""
    top = {
        "simsql top-10": _latency(90.0),
        "plain scan top-10": _latency(120.0),
        "simsql approximate r=2": _latency(6.0, recall=0.83),
        "pgvector HNSW ef_search=20": _latency(2.0, recall=0.7),
        "pgvector HNSW ef_search=100": _latency(6.5, recall=0.95),
    }
    return {
        "config": "sh2-test",
        "command": "python -m benchmarks --sections latency --sizes 1000000",
        "bits": {"entropy_bits": 60.1, "fullest_bucket_vs_uniform": 77.0, "bucket_seen_by_a_row_vs_uniform": 6.5},
        "load_average": [2.5, 2.0, 1.5],
        "workloads": {
            "near-dup": {
                "systems": {
                    "simsql similar_to (3 bits)": _latency(0.8),
                    "plain scan (3 bits)": _latency(100.0),
                    "simsql find_original (7 bits)": _latency(1.6),
                    "plain scan (7 bits)": _latency(96.0),
                },
                "kth_distance_quantiles": {"0.1": 8.0, "0.5": 12.0, "0.9": 16.0},
            },
            "top-10 spread": {"systems": top, "kth_distance_quantiles": {"0.1": 15.0, "0.5": 19.0, "0.9": 22.0}},
        },
    }


def test_latency_section_compares_with_the_scan_and_pgvector() -> None:
    text = report.latency_section({"latency": {"default": {"1000000": _latency_entry()}}})
    assert "### `default` fingerprints, N=1M" in text
    assert "60.1 of 64 bits" in text and "77× uniform" in text
    assert "| near-dup | simsql similar_to (3 bits) | 0.8 | 1.60 | 100% | 125× | 125× |" in text  # 100 / 0.8
    assert "| near-dup | simsql find_original (7 bits) | 1.60 | 3.20 | 100% | 60× |" in text  # against the 7-bit scan
    assert "| top-10 spread | simsql top-10 | 90 | 180 | 100% | 1.3× |" in text
    # Equal latency: approximate r=2 (6 ms) beside ef_search=100 (6.5 ms), not ef_search=20.
    assert "| top-10 spread | r=2 | 6 | 83% | ef_search=100 | 6.50 | 95% |" in text
    assert report.latency_section({}).endswith("_Not measured in this run._")


def test_full_results_render_every_section(tmp_path: Path) -> None:
    results = synthetic()
    markdown = tmp_path / "BENCHMARKS.md"
    plots = tmp_path / "plots"
    report.write(results, markdown, plots)
    text = markdown.read_text(encoding="utf-8")

    assert "Not measured in this run" not in text
    assert "python -m benchmarks --sizes 100000,1000000" in text and "Test CPU 9000" in text
    # Query latency: p50, the ratio to simsql and the speed-up over the plain scan (80.07 / 2.11).
    assert "| 1M | simsql | 2.11 |" in text
    assert "| 1M | plain scan (100 queries) | 80.1 |" in text
    assert "38×" in text
    assert "| 1M | pgvector HNSW ef_search=40 | 7.49 |" in text and "91%" in text
    assert "2,044" in text  # batched most_similar_many qps
    # Index size, dedup, throughput, quality, ingest.
    assert "272" in text and "1.6×" in text  # HNSW build seconds, bytes/row vs simsql (384.4 / 245.2)
    assert "| 100k | simhash package all-pairs | 117 | 2,760 | 116× |" in text
    assert "19.9" in text and "11×" in text and "98 documents failed" in text
    assert "| edit @ 0.02 | 200 | 92% | 98% |" in text  # recall within 3 bits, default vs count
    assert "2.9e-04" in text  # count's FP rate at <= 3 bits on random pairs
    assert "51.7" in text and "42.4" in text  # bit entropy
    assert "| naive GENERATED STORED column | 2,004 | 2,004 | 2.20 |" in text
    assert "5,239" in text

    if HAS_MATPLOTLIB:
        for name in ("latency_near-dup.png", "latency_top-10-clustered.png", "latency_top-10-spread.png", "quality_en.png"):
            path = plots / name
            assert path.exists() and path.stat().st_size > 5000, name
            assert f"](plots/{name})" in text

    headline = report.headline(results)
    assert "N=1M" in headline
    assert "2.11 ms" in headline and "80.1 ms (38×)" in headline
    assert "7.49 ms (3.5×), recall 91%" in headline
    assert "8.51 ms (4.0×)" in headline
    assert "19.9 MB/s" in headline and "5,239" in headline


def test_partial_results_say_not_measured(tmp_path: Path) -> None:
    results = {"machine": {"cores": 2}, "command": "python -m benchmarks --sections fingerprint", "fingerprint": synthetic()["fingerprint"]}
    markdown = tmp_path / "out" / "BENCHMARKS.md"
    report.write(results, markdown, tmp_path / "plots")
    text = markdown.read_text(encoding="utf-8")
    # Queries, index, dedup, quality and ingest are missing; fingerprint throughput is there.
    assert text.count("Not measured in this run") == 6  # real-text latency too
    assert "19.9" in text
    assert not list((tmp_path / "plots").glob("latency_*.png"))
    headline = report.headline(results)
    assert "not measured" in headline.lower() and "19.9 MB/s" in headline

    # A run with nothing at all still renders.
    report.write({}, tmp_path / "empty.md", tmp_path / "plots")
    assert (tmp_path / "empty.md").read_text(encoding="utf-8").count("Not measured in this run") == 8  # machine too


def test_main_rerenders_from_saved_json(tmp_path: Path) -> None:
    saved = tmp_path / "full.json"
    saved.write_text(json.dumps(synthetic()), encoding="utf-8")
    markdown = tmp_path / "B.md"
    assert report.main([str(saved), "--markdown", str(markdown), "--plots", str(tmp_path / "p")]) == 0
    assert "| 1M | simsql | 2.11 |" in markdown.read_text(encoding="utf-8")


def test_rerendering_keeps_the_sections_other_scripts_maintain(tmp_path: Path) -> None:
    """The report owns the top of BENCHMARKS.md; the originality, balance and MySQL sections
    below the first ``<!-- name:start -->`` marker come from other scripts (or a person), and
    re-rendering from one results file once wiped them all."""
    markdown = tmp_path / "BENCHMARKS.md"
    tail = "<!-- mysql:start -->\n## MySQL\n\nkept 1\n<!-- mysql:end -->\n\n## Hand-written\n\nkept 2\n"
    markdown.write_text("# old report\n\nreplaced\n\n" + tail, encoding="utf-8")
    report.write(synthetic(), markdown, tmp_path / "plots")
    text = markdown.read_text(encoding="utf-8")
    assert "replaced" not in text and "| 1M | simsql | 2.11 |" in text
    assert text.endswith(tail)


def test_latency_section_alone_prints_without_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "full.json"
    saved.write_text(json.dumps(synthetic()), encoding="utf-8")
    markdown = tmp_path / "B.md"
    assert report.main([str(saved), "--markdown", str(markdown), "--latency-section"]) == 0
    assert not markdown.exists()
    assert capsys.readouterr().out.startswith("## Real-text query latency")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings of ``markdown`` (outside code blocks)."""
    anchors: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.*)", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("document", ["README.md", "research/README.md"])
def test_links_into_benchmarks_md_reach_a_section(document: str) -> None:
    """Figures live in BENCHMARKS.md and the prose links to them: a link whose section was renamed
    would send the reader nowhere."""
    root = Path(__file__).resolve().parents[1]
    anchors = _anchors((root / "BENCHMARKS.md").read_text(encoding="utf-8"))
    links = re.findall(r"\]\((?:\.\./)?BENCHMARKS\.md#([^)]+)\)", (root / document).read_text(encoding="utf-8"))
    assert links, f"{document} no longer links to BENCHMARKS.md's sections"
    assert sorted(set(links) - anchors) == []
