"""Smoke run of benchmarks.vectors_lists (issue 44) on MySQL/MariaDB: tiny size, the exact scan
exact, every system's figures reported, the table dropped after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.harness


def test_vector_lists_benchmark_smoke_run(mysql_engine: Engine) -> None:
    pytest.importorskip("sklearn", reason="the benchmark's embeddings need the bench extra (scikit-learn)")
    url = mysql_engine.url.render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.vectors_lists", "--rows", "3000", "--queries", "6", "--exact-queries", "3",
         "--probes", "2,8", "--candidates", "20,400", "--url", url],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["fit"]["rows_placed"] == 3000 and report["fit"]["left_behind"] == 0
    top10 = report["top10"]
    assert top10["exact scan"]["queries"] == 3 and top10["exact scan"]["recall@10"] == 1.0
    grid = {name: f for name, f in top10.items() if name.startswith("lists ")}
    assert sorted(grid) == sorted(f"lists probes={n} candidates={m}" for n in (2, 8) for m in (20, 400))
    assert all(f["queries"] == 6 and 0.0 <= f["recall@10"] <= 1.0 and f["speed-up vs exact scan"] > 0 for f in grid.values())
    assert "parts_vectors" not in inspect(mysql_engine).get_table_names()
