"""Render ``BENCHMARKS.md`` and its plots from benchmark results.

The results are the dict ``python -m benchmarks`` saves as JSON (sections ``machine``,
``command``, ``fingerprint``, ``quality``, ``queries``, ``latency``, ``ingest``; any of them may
be missing, and a missing one renders as "not measured in this run"). Everything rendered comes
from the results, so re-rendering the committed files reproduces the document::

    python -m benchmarks.report [RESULTS.json ...] [--markdown BENCHMARKS.md] [--plots DIR]

Modules: :mod:`.markdown` (number and table formatting), :mod:`.sections` (the scale run's
sections and the summary), :mod:`.latency` (real-text latency), :mod:`.quality`
(duplicate-detection quality), :mod:`.plots`, :mod:`.document` (the file as a whole).
"""

from __future__ import annotations

from .document import DEFAULT_RESULTS, load, main, render, write
from .latency import latency_headline, latency_section
from .sections import headline

__all__ = ["DEFAULT_RESULTS", "headline", "latency_headline", "latency_section", "load", "main", "render", "write"]
