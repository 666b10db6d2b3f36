"""The demo runs the whole job on real text and finds what was planted."""

from __future__ import annotations

import io
import re
import subprocess
import sys

from simsql.demo import run_demo


def test_demo_finds_planted_copies_and_checks_originality(database_url: str) -> None:
    out = io.StringIO()
    assert run_demo(database_url, out=out) == 0
    report = out.getvalue()
    assert "Most similar articles" in report
    found = {kind: (int(a), int(b)) for kind, a, b in re.findall(r"planted (\w+)\s+copies found: (\d+)/(\d+)", report)}
    assert set(found) == {"edited", "boilerplate", "reordered"}
    assert found["reordered"][0] == found["reordered"][1] > 0  # reordering never moves a fingerprint
    assert found["edited"][0] >= found["edited"][1] // 2
    assert re.search(r"a lightly edited copy: not original, matches #\d+ .* at [0-3] bits", report)
    assert "a new text: original" in report


def test_demo_entry_point(database_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "simsql.cli", "demo", "--url", database_url],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Duplicate groups within 3 bits" in result.stdout
