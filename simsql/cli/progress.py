"""The long-running commands' terminal side: a progress bar on stderr (stdout stays for results)
and a Ctrl-C that interrupts this process, not its fingerprinting workers.

Used by ``backfill``, ``attach --backfill`` and ``refingerprint``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def progress_bar(table: str, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A bar on stderr, drawn from the first progress report on: a command that fails before
    its work starts (a table that is not attached) prints its error alone, not after an
    empty bar."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    bars: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(desc=table, unit=" rows", file=sys.stderr, dynamic_ncols=True, total=total))
        bar = bars[0]
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


@contextmanager
def interrupt_main_process_only() -> Iterator[None]:
    """Ctrl-C reaches the whole process group: let it interrupt this process only. Forked
    fingerprinting workers inherit this handler and ignore the signal, so they do not print a
    traceback each; the library shuts them down after the interrupted batch."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() == owner:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
