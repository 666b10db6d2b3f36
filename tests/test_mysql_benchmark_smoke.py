"""CI's smoke run of benchmarks.mysql: tiny size, uniform fingerprints, both databases, exact answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.harness


def test_mysql_benchmark_smoke_run(mysql_engine: Engine, database_url: str, tmp_path: Path) -> None:
    mysql_url = mysql_engine.url.render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.mysql", "--size", "3000", "--queries", "5", "--scan-queries", "5",
         "--uniform", "--storage", "virtual,stored", "--mysql-url", mysql_url, "--pg-url", database_url,
         "--name", "mysql-smoke", "--results-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "mysql-smoke.json").read_text())
    assert results["fingerprints"] == "uniform random"
    for storage in ("virtual", "stored"):
        for workload in results["mariadb"][storage]["workloads"].values():
            for system in workload["systems"].values():
                assert system["recall"] == 1.0
    for workload in results["postgresql"]["workloads"].values():
        assert workload["systems"]["simsql (postgresql)"]["recall"] == 1.0
    assert set(results["ratios"]) == {"near-dup", "top-10 spread"}


def test_mysql_benchmark_smoke_run_on_real_text(mysql_engine: Engine, database_url: str, tmp_path: Path) -> None:
    """The path the published figures take: fingerprints of real text (the uniform run above
    never reached it, and it broke unnoticed when the scale sets began to need a fingerprinter)."""
    import pytest

    from benchmarks import corpus

    try:
        corpus.english_documents(limit=5)
    except corpus.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    mysql_url = mysql_engine.url.render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.mysql", "--size", "3000", "--queries", "5", "--scan-queries", "5",
         "--mysql-url", mysql_url, "--pg-url", database_url, "--name", "mysql-smoke-real", "--results-dir", str(tmp_path),
         "--documents", "300"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "mysql-smoke-real.json").read_text())
    assert results["fingerprints"].startswith("real text")
    for workload in results["mariadb"]["virtual"]["workloads"].values():
        for system in workload["systems"].values():
            assert system["recall"] == 1.0
