"""Fingerprinting worker processes that never outlive the process that started them.

**Guarantee.** When the process running a backfill (or a refingerprint, which fills through the
same workers) ends in any way, SIGKILL included, its workers end too: at once on Linux, within
:data:`WATCH_INTERVAL_S` elsewhere. No copy of its database connections then stays open, so the
server sees its sessions close, rolls back the transaction in flight and releases its row locks;
the next backfill resumes after the last committed batch. Workers never use a database
connection themselves.

**Why it needs saying.** On Linux the workers are forked, and a forked child holds a copy of
every socket its parent had open: the engine's pooled connections and the reader and writer the
backfill has checked out. A worker never touches them, but while one copy is open the server
keeps the session. A SIGKILLed backfill used to leave its writer ``idle in transaction`` with the
batch's row locks for as long as its workers lived, which was for ever: they wait for work on a
queue whose other end they hold themselves (issue 21, item 1).

**How.**

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills the worker when the thread
  that started it ends (the backfill's own thread, which outlives the pool). The parent's pid is
  checked right after, for a parent that died before the call.
* Everywhere: a daemon thread in the worker polls ``os.getppid()`` and exits when the parent is
  gone (the worker has been re-parented).
* A forked worker drops the engine's pool without closing its connections
  (``engine.dispose(close=False)``: closing would end the parent's sessions), so nothing run in
  a worker can reach a connection of its parent's. Under ``spawn``/``forkserver`` nothing is
  inherited and there is nothing to drop.
* Workers ignore Ctrl-C: the main process decides, and a worker traceback helps nobody.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from sqlalchemy import Engine

__all__ = ["WATCH_INTERVAL_S", "worker_pool"]

#: How often a worker checks that its parent is alive where the kernel cannot tell it.
WATCH_INTERVAL_S = 0.2

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_pool(workers: int, engine: Engine) -> ProcessPoolExecutor:
    """``workers`` processes that die with this one (see the module docstring)."""
    context = multiprocessing.get_context()
    inherited = engine if context.get_start_method() == "fork" else None  # (an Engine does not pickle)
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), inherited)
    )


def _start_worker(parent: int, engine: Engine | None) -> None:
    """Runs first in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watcher below still works
            pass
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the kernel was told
    threading.Thread(target=_watch_parent, args=(parent,), name="simsql-parent-watch", daemon=True).start()
    if engine is not None:
        engine.dispose(close=False)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL_S)
    os._exit(1)
