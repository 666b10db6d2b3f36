"""``python -m benchmarks.report``: see :mod:`benchmarks.report`."""

from __future__ import annotations

from . import main

raise SystemExit(main())
