"""simsql's benchmark suite, run beside the peers a user would pick instead: ``python -m benchmarks``.

``python -m benchmarks --quick`` is the smoke run; BENCHMARKS.md ("Rerun") gives the full suite's
commands, and ``python -m benchmarks.report`` renders BENCHMARKS.md from the committed results.
The experiments that chose simsql's defaults live apart, in :mod:`research`.

Modules, lowest first: :mod:`.internals` (the simsql internals the benchmarks read, in one place),
:mod:`.hamming` and :mod:`.timing` (ground truth and scoring); :mod:`.neardup`, :mod:`.manpages`,
:mod:`.corpus` (the man-page corpus) and :mod:`.edits` (planted near-duplicates); :mod:`.scale`
(millions of real-text fingerprints from cached counts); the sections :mod:`.throughput`,
:mod:`.quality`, :mod:`.queries`, :mod:`.latency`, :mod:`.ingest`; the standalone runs
:mod:`.mysql`, :mod:`.backfill`, :mod:`.refingerprint`; and :mod:`.report`.
"""

from __future__ import annotations

import sys
import time


def log(message: str) -> None:
    """A timestamped progress line on stderr: every benchmark reports progress the same way."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
