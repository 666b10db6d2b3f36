"""BENCHMARKS.md as a whole: the suite's sections rendered from results, the rest kept.

The part this module renders runs from the title to the ingest section. Everything from the first
``<!-- name:start -->`` marker on (the MySQL, originality, balance and background sections) is
rendered by the command each of those sections names, and is kept as it is here, so re-rendering
one results file cannot wipe them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .latency import latency_headline, latency_section
from .markdown import slug
from .plots import latency_plots, pyplot, quality_plots
from .quality import quality_section
from .sections import (
    WORKLOADS,
    dedup_section,
    fingerprint_section,
    headline,
    index_section,
    ingest_section,
    machine_section,
    query_section,
    result_sizes,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
DEFAULT_RESULTS = ("full.json", "latency-v2.json", "latency-v1.json")
"""The committed results the rendered part of BENCHMARKS.md shows: the full run (scale, index,
dedup, fingerprint, quality, ingest) and the real-text latency runs of ``default`` and ``v1``."""

INTRO = """Every figure here comes from a committed results file, and every section names the command
that measured it. This part, down to "Ingest", is rendered by `python -m benchmarks.report` from
{files}. The sections after it are kept as they are by that command and rendered by the commands
they name (the research sections by `research/`: see [research/README.md](research/README.md)).
Do not edit by hand: rerun instead.

## Rerun

- The smoke run, a few minutes at tiny sizes (its figures mean nothing): `python -m benchmarks
  --quick` (on the embedded PostgreSQL; `--url postgresql+psycopg://...` for your server).
- The suite at scale: `python -m benchmarks --sizes 100000,1000000,10000000 --queries 100`
  (fingerprint, quality, queries and ingest sections), and the real-text latency section:
  `python -m benchmarks --sections latency --sizes 1000000 --queries 100 --configs
  default,background --hnsw-max 0`. MySQL and MariaDB: `python -m benchmarks.mysql --size 1000000
  --queries 200`; backfill on both servers: `python -m benchmarks.backfill`; online
  refingerprint: `python -m benchmarks.refingerprint --url URL`.
- Render this file again: `python -m benchmarks.report [RESULTS.json ...]` (by default the
  committed files named above)."""


def render(results: dict[str, Any], plot_links: dict[str, str] | None = None, sources: Sequence[str] = DEFAULT_RESULTS) -> str:
    """The rendered part of the document (plots linked when ``plot_links`` names them)."""
    plots = plot_links or {}
    parts = [
        "# Benchmarks",
        INTRO.format(files=", ".join(f"`{s if '/' in s else 'benchmarks/results/' + s}`" for s in sources)),
        "## Summary",
        headline(results),
        machine_section(results),
        query_section(results, plots),
        latency_section(results),
        index_section(results),
        dedup_section(results),
        fingerprint_section(results),
        quality_section(results, plots),
        ingest_section(results),
    ]
    return "\n\n".join(parts) + "\n"


def _expected_plots(results: dict[str, Any], plots_dir: Path) -> dict[str, Path]:
    """The plots the results call for, by the names :mod:`benchmarks.report.plots` draws them."""
    expected: dict[str, Path] = {}
    if result_sizes(results):
        expected.update({w: plots_dir / f"latency_{slug(w)}.png" for w, _ in WORKLOADS})
    for lang in (results.get("quality") or {}).get("languages") or {}:
        expected[lang] = plots_dir / f"quality_{slug(lang)}.png"
    return expected


def write(results: dict[str, Any], markdown_path: Path, plots_dir: Path, sources: Sequence[str] = DEFAULT_RESULTS) -> None:
    """Write ``markdown_path`` and the PNG plots in ``plots_dir`` from ``results``.

    Without matplotlib the plots already in ``plots_dir`` are linked as they are (a re-render
    of committed results then reproduces the committed document); a note says which are missing.
    """
    markdown_path = Path(markdown_path)
    plots_dir = Path(plots_dir)
    plt = pyplot()
    if plt is not None:
        plots_dir.mkdir(parents=True, exist_ok=True)
        paths = {**latency_plots(results, plots_dir, plt), **quality_plots(results, plots_dir, plt)}
    else:
        paths = {k: p for k, p in _expected_plots(results, plots_dir).items() if p.exists()}
    base = markdown_path.resolve().parent
    links = {k: Path(os.path.relpath(p.resolve(), base)).as_posix() for k, p in paths.items()}
    text = render(results, links, sources)
    if plt is None and set(_expected_plots(results, plots_dir)) - set(paths):
        text += "\n_Plots not drawn: matplotlib is not installed (`pip install -e .[bench]`)._\n"
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    kept = _maintained_elsewhere(markdown_path)
    markdown_path.write_text(text.rstrip("\n") + "\n\n" + kept if kept else text, encoding="utf-8")


_FIRST_MARKER = re.compile(r"^<!-- [\w-]+:start -->$", re.MULTILINE)


def _maintained_elsewhere(markdown_path: Path) -> str:
    """The part of an existing BENCHMARKS.md this report does not own: everything from the first
    ``<!-- name:start -->`` marker on (originality, balance, MySQL: written by other scripts or by
    hand), kept as it is so that re-rendering one results file cannot wipe them."""
    if not markdown_path.exists():
        return ""
    existing = markdown_path.read_text(encoding="utf-8")
    marker = _FIRST_MARKER.search(existing)
    return existing[marker.start():] if marker else ""


def load(names: Sequence[str]) -> dict[str, Any]:
    """Results merged from ``names`` (paths, or names in ``benchmarks/results``): later files add
    or replace sections; a latency-only run adds its configurations, not its machine or command."""
    results: dict[str, Any] = {}
    for name in names:
        path = Path(name)
        if not path.exists() and (RESULTS / name).exists():
            path = RESULTS / name
        loaded = json.loads(path.read_text(encoding="utf-8"))
        latency = loaded.pop("latency", None)
        for config, sizes in (latency or {}).items():
            results.setdefault("latency", {}).setdefault(config, {}).update(sizes)
        if latency is not None and not set(loaded) & {"fingerprint", "quality", "queries", "ingest"}:
            continue
        results.update(loaded)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("results", nargs="*", default=list(DEFAULT_RESULTS),
                        help=f"results JSON file(s), later ones adding or replacing sections (default: {' '.join(DEFAULT_RESULTS)})")  # fmt: skip
    parser.add_argument("--markdown", default=str(ROOT.parent / "BENCHMARKS.md"))
    parser.add_argument("--plots", default=str(ROOT / "plots"))
    parser.add_argument("--headline", action="store_true", help="only print the summary table")
    parser.add_argument("--latency-headline", action="store_true", help="only print the real-text latency summary table")
    parser.add_argument("--latency-section", action="store_true",
                        help="only print the real-text latency section (for a marked section of BENCHMARKS.md)")
    args = parser.parse_args(argv)
    results = load(args.results)
    for flag, part in ((args.headline, headline), (args.latency_headline, latency_headline), (args.latency_section, latency_section)):
        if flag:
            print(part(results))
            return 0
    write(results, Path(args.markdown), Path(args.plots), args.results)
    print(f"wrote {args.markdown} and plots in {args.plots}")
    return 0
