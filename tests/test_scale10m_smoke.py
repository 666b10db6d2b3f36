"""benchmarks.scale10m at a tiny size against the real PostgreSQL: its signatures from cached
paragraph features equal signatures_many's, and the table it builds equals, column for column,
the one benchmarks.originality loads, which then accepts it with --reuse; benchmarks.submissions
streams submissions through it every way and leaves it as it found it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

pytestmark = pytest.mark.harness

ROOT = Path(__file__).resolve().parents[1]


def test_scale10m_builds_the_originality_table(database_url: str, schema: str, admin_engine: Engine, tmp_path: Path) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("benchmarks.scale10m loads by COPY: PostgreSQL only")
    from benchmarks import heldout

    try:  # Debian's manuals: no man pages to render on a fresh checkout (minutes)
        heldout.files("en")
    except heldout.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    from benchmarks.originality import CORPUS_UNAVAILABLE
    reference = f"{database_url}{'&' if '?' in database_url else '?'}options=-csearch_path%3D{schema}"
    made = f"{schema}_built"
    try:
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.originality", "--source", "heldout", "--url", reference, "--rows", "1000", "--parts", "storage",
             "--workers", "2", "--schema", schema, "--results-dir", str(tmp_path)],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if result.returncode == CORPUS_UNAVAILABLE:  # only some of the manuals: fewer documents than the 200 originals
            pytest.skip(result.stderr.strip().splitlines()[-1])
        assert result.returncode == 0, result.stderr[-3000:]
        report = tmp_path / "scale10m.json"
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.scale10m", "--source", "heldout", "--url", database_url, "--schema", made, "--rows", "1000",
             "--validate", "300", "--compare", schema, "--compare-rows", "1000", "--batch", "128", "--min-free-gb", "0",
             "--results", str(report)],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        built = json.loads(report.read_text())
        assert built["validation"]["hamming_max"] == 0 and built["validation"]["texts_equal_filler"]
        assert built["table"]["rows"] == 1000 and built["table"]["rows_without_signature"] == 0
        assert built["compare"]["rows_compared"] == 1000 and built["compare"]["rows_differing"] == 0
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.originality", "--source", "heldout", "--url", database_url, "--rows", "1000", "--reuse",
             "--parts", "storage", "--schema", made, "--results-dir", str(tmp_path / "reuse")],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        again = json.loads((tmp_path / "reuse" / "originality-postgresql-1000-heldout-storage.json").read_text())
        assert again["build"]["reused"] and again["storage"]["rows"] == 1000
        pipeline = tmp_path / "submissions.json"
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.submissions", "--source", "heldout", "--url", database_url, "--schema", made,
             "--submissions", "10", "--batch", "5", "--results", str(pipeline)],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        ways = json.loads(pipeline.read_text())["ways"]
        assert len({json.dumps(way["answers"], sort_keys=True) for way in ways.values()}) == 1  # every way answers alike
        assert ways["one"]["answers"]["copy_found"] == 2 and not ways["one"]["answers"].get("copy_missed")
        with admin_engine.connect() as connection:  # the rows the run stored are gone again
            assert connection.execute(text(f'SELECT count(*) FROM "{made}".bench_wide_docs')).scalar_one() == 1000
    finally:
        with admin_engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{made}" CASCADE'))


def test_scale10m_centred_signatures_from_cached_counts_are_exact(tmp_path: Path) -> None:
    """--background: the table's signatures centred on a wide background (fitted on the filler
    and saved when the file is missing), made from cached paragraph counts, equal
    signatures_many of the centred configuration, bit for bit (no database: --rows 0)."""
    from benchmarks import heldout

    try:
        heldout.files("en")
    except heldout.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    from benchmarks.originality import CORPUS_UNAVAILABLE
    from simsql.fingerprint import Background

    background, report = tmp_path / "background.json", tmp_path / "validate.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale10m", "--source", "heldout", "--rows", "0", "--validate", "200",
         "--background", str(background), "--results", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if result.returncode == CORPUS_UNAVAILABLE:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert result.returncode == 0, result.stderr[-3000:]
    assert Background.load(background).wide
    validated = json.loads(report.read_text())["validation"]
    assert validated["identical"] == validated["articles"] == 200 and validated["hamming_max"] == 0
