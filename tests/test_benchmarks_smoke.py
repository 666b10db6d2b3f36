"""CI's smoke run of the benchmark suite: tiny sizes, every section, real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_smoke_run(database_url: str, schema: str) -> None:
    from benchmarks import corpus

    try:
        corpus.english_documents(limit=5)
        corpus.chinese_documents(limit=5)
    except corpus.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    url = f"{database_url}{'&' if '?' in database_url else '?'}options=-csearch_path%3D{schema}"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--url", url, "--sizes", "3000", "--queries", "5",
         "--ingest-rows", "1500", "--sections", "fingerprint,queries,latency,ingest", "--configs", "default", "--repeat", "1",
         "--name", "smoke"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((ROOT / "benchmarks" / "results" / "smoke.json").read_text())
    workloads = results["queries"]["3000"]["workloads"]
    for workload in workloads.values():
        assert workload["systems"]["simsql"]["recall"] == 1.0
        assert workload["systems"]["plain scan"]["recall"] == 1.0
    latency = results["latency"]["default"]["3000"]["workloads"]
    for workload in latency.values():
        for system, row in workload["systems"].items():
            if not system.startswith(("pgvector", "simsql approximate")):
                assert row["recall"] == 1.0, system
    assert results["fingerprint"]["en"]
    assert results["ingest"]["backfill"]["rows"] == 2000
