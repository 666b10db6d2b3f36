"""The fault-injection script (benchmarks/faults.py) in a small round on every server:
``simsql backfill`` (and, where the server refingerprints online, ``simsql refingerprint``)
SIGKILLed at a random point while writer processes write, then resumed; every row must end with
its configuration's fingerprint, and no worker may outlive its killed command.

Marked ``slow`` (about 10-20 s a server): CI runs it; ``-m "not slow"`` skips it locally.
"""

from __future__ import annotations

import pytest

from benchmarks.faults import run


@pytest.mark.slow
def test_a_round_of_kills_under_writers_loses_and_strands_nothing(any_url: str) -> None:
    lines: list[str] = []
    summary = run(any_url, rounds=1, rows=1500, writers=2, seed=7, longest=1.0, report=lines.append)
    assert summary.failures == [], lines
    assert summary.rounds == 1 and summary.rows_checked >= 1000, lines
    assert (summary.rows_wrong, summary.rows_missing, summary.orphans) == (0, 0, 0), lines
    assert summary.writes > 0, lines
