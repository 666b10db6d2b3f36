"""simsql's benchmarks, run beside the peers a user would pick instead (``python -m benchmarks``)."""

from __future__ import annotations

import sys
import time


def log(message: str) -> None:
    """A timestamped progress line on stderr: every benchmark reports progress the same way."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
