"""CI's smoke run of the benchmark suite: tiny sizes, every section, real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.harness


@pytest.fixture
def bench_url(database_url: str, schema: str) -> str:
    """The test's database and schema as a URL for a benchmark subprocess; skips when the
    corpus (Debian's man pages) is not installed."""
    from benchmarks import corpus

    try:
        corpus.english_documents(limit=5)
        corpus.chinese_documents(limit=5)
    except corpus.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    return f"{database_url}{'&' if '?' in database_url else '?'}options=-csearch_path%3D{schema}"


def test_benchmark_smoke_run(bench_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--url", bench_url, "--sizes", "3000", "--queries", "5",
         "--ingest-rows", "1500", "--sections", "fingerprint,queries,latency,ingest", "--configs", "default", "--repeat", "1",
         "--name", "smoke", "--results-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "smoke.json").read_text())
    workloads = results["queries"]["3000"]["workloads"]
    for workload in workloads.values():
        assert workload["systems"]["simsql"]["recall"] == 1.0
        assert workload["systems"]["plain scan"]["recall"] == 1.0
    latency = results["latency"]["default"]["3000"]["workloads"]
    for workload in latency.values():
        for system, row in workload["systems"].items():
            if system.startswith("simsql find_original"):
                # exact within 11 bits; past that only rows with a block within 2 bits are promised
                assert row["recall_of_what_its_probes_reach"] == 1.0, system
                if int(system.rsplit("(", 1)[1].split()[0]) <= 11:
                    assert row["recall"] == 1.0, system
            elif not system.startswith(("pgvector", "simsql approximate")):
                assert row["recall"] == 1.0, system
    assert results["fingerprint"]["en"]
    assert results["ingest"]["backfill"]["rows"] == 2000


def test_balance_background_fingerprints_from_cached_counts_are_exact() -> None:
    """research.balance computes background-centred fingerprints of a million articles from
    summed unit counts, split by script; any slip (a Han feature counted as Latin, a float where
    simsql compares integers) would measure something simsql does not do. Articles here mix
    Latin and Han units, and the centres are arbitrary, so every term of the rule matters."""
    import random

    import numpy as np

    from research import balance
    from simsql import Fingerprinter
    from simsql.fingerprint import Background

    units = ["The first sentence explains the idea.", "It has two parts, and a third.", "第一段介绍了这个想法。",
             "它有两个句子。", "mixed 中文 words here", "没有句号的一句", "另一句也没有句号", "An example is short!"]  # fmt: skip
    rng = random.Random(7)
    members = [np.array(rng.sample(range(len(units)), rng.randint(1, 5)), dtype=np.int64) for _ in range(60)]
    pop = balance.Population("sentences", "zh", units, np.array([len(u) for u in units]), members)
    centres = random.Random(3)
    background = Background(
        [centres.randint(-600, 600) for _ in range(64)], [centres.randint(-600, 600) for _ in range(64)], Fingerprinter().config_id
    )
    fp = Fingerprinter(background=background)
    balance.verify(fp, pop, balance.Vocabulary(units, fp), sample=len(members))
    plain = balance._fingerprints(members, balance.Vocabulary(units, Fingerprinter()), Fingerprinter())
    assert not np.array_equal(plain, balance._fingerprints(members, balance.Vocabulary(units, fp), fp))


def test_probe_floor_smoke_run(bench_url: str, tmp_path: Path) -> None:
    """research.probe_floor's figures are only worth reading if its searches answer what the
    probes promise: each check's nearest row is the nearest one radius-r block probes can reach
    (numpy, exact distances), on uniform and on real-text fingerprints."""
    out = tmp_path / "probe-floor.json"
    result = subprocess.run(
        [sys.executable, "-m", "research.probe_floor", "--quick", "--url", bench_url, "--rows", "3000", "--queries", "8",
         "--repeat", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    populations = json.loads(out.read_text())["populations"]
    assert set(populations) == {"uniform random", "real text (default fingerprints)"}
    assert populations["uniform random"]["bits"]["entropy_bits"] > 63.5
    for population in populations.values():
        for search in population["searches"].values():
            assert search["answers_equal_nearest_reachable"] == 1.0
            assert search["explained"] == 8


def test_originality_smoke_run(bench_url: str, schema: str, tmp_path: Path) -> None:
    """benchmarks.originality's bulk load (signatures in worker processes, COPY, indexes built
    after) must store what the ORM would: the stored originals are found again, the table holds
    every row, and a second run with --reuse checks the same table without loading it."""
    from benchmarks import heldout
    from benchmarks.originality import CORPUS_UNAVAILABLE

    try:
        heldout.files("en")
    except heldout.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    command = [sys.executable, "-m", "benchmarks.originality", "--source", "heldout", "--url", bench_url, "--rows", "300",
               "--originals", "5", "--fresh", "10", "--scans", "2", "--workers", "2", "--schema", schema, "--results-dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode == CORPUS_UNAVAILABLE:  # only some of the manuals, fewer documents than asked for
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert result.returncode == 0, result.stderr[-3000:]
    first = json.loads((tmp_path / "originality-postgresql-300-heldout.json").read_text())
    assert first["storage"]["rows"] == 300 and not first["build"]["reused"]
    assert first["recall"]["sub_1"] == first["recall"]["header_footer"] == 1.0
    result = subprocess.run([*command, "--reuse", "--parts", "recall"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    again = json.loads((tmp_path / "originality-postgresql-300-heldout-recall.json").read_text())
    assert again["build"]["reused"] and again["recall"] == first["recall"]


def test_shingle_anchors_smoke_run(bench_url: str, schema: str, tmp_path: Path) -> None:
    """benchmarks.shingle_anchors (issue 43's what-if) on a small table of benchmarks.originality:
    its side table holds every row's sampled shingles, and the anchors, the hybrid and
    find_original each find the originals of the lightest disguises, with no alarm on articles
    of paragraphs in no row."""
    from benchmarks import heldout
    from benchmarks.originality import CORPUS_UNAVAILABLE

    try:
        heldout.files("en")
    except heldout.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    sizes = ["--rows", "300", "--originals", "5", "--fresh", "10"]
    build = [sys.executable, "-m", "benchmarks.originality", "--source", "heldout", "--url", bench_url, *sizes, "--scans", "1",
             "--workers", "1", "--parts", "storage", "--schema", schema, "--results-dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode == CORPUS_UNAVAILABLE:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert result.returncode == 0, result.stderr[-3000:]
    report = tmp_path / "anchors.json"
    anchors = [sys.executable, "-m", "benchmarks.shingle_anchors", "--source", "heldout", "--url", bench_url, *sizes, "--schema", schema,
               "--build", "--rate-bits", "4", "--texts", "5", "--workers", "1", "--results", str(report)]  # fmt: skip
    result = subprocess.run(anchors, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    measured = json.loads(report.read_text())
    assert measured["build"]["rows"] == 300 and measured["build"]["entries_per_row"] > 1
    for way in (measured["measured"]["rates"]["4"], measured["measured"]["rates"]["hybrid 4"], measured["measured"]["library"]):
        assert way["recall"]["sub_1"] == way["recall"]["header_footer"] == 1.0
        assert way["alarms"]["false_alarms"]["fresh_unseen"] == 0
