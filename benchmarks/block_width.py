"""What wider blocks would buy the originality check on large tables (issue 43; no index is built).

    python -m benchmarks.block_width --background /work/logs/bg-manpages-22.json \\
        --url postgresql+psycopg://postgres@127.0.0.1:5432/h_scale --schema bench_originality_1m_bg

A fresh text's check reads every row its probes reach; a centred block of ``w`` bits holds about
``N / 2**w`` rows, so on today's 20-bit blocks the rows read, and the check's time, grow with the
table (multi-index hashing, Norouzi, Punjani and Fleet, CVPR 2012: blocks of about log2(N) bits
keep a probe's bucket at about one row). Wider blocks make a copy's block equal its original's
less often, so the same budget reaches fewer disguised copies. This measures both sides for
candidate layouts of the 256-bit signature, with simsql's own margin-directed probes
(:func:`simsql.text.signature.probe_values`, any :class:`~simsql.text.signature.BlockLayout`):

* **copies unreached** (no database): for every light evasion of the originality benchmark's
  originals, on the man pages (tuned on) and Debian's manuals (held out), English and Chinese,
  signatures centred on a wide background fitted on the source's own filler, whether a probe of
  the budget equals the original's value in its block; at the centred default budget
  (:func:`simsql.queries.wide.probe_budget`, ``centred=True``) and at twice it;
* **rows read by a fresh text** (``--url``/``--schema``: a table ``benchmarks.scale10m`` built
  with ``--background``): the words of all its rows are read once, cut by each layout, and for
  fresh articles (the table's own paragraphs, and unseen ones) the rows of every probed bucket
  are counted, as the block indexes would return them. The 10M column multiplies by ten: on
  centred bits the buckets fill as chance does (measured for today's layout: 2,225 rows at 1M,
  21,944 at 10M, BENCHMARKS.md "A wide background").

Results go to ``benchmarks/results/block-width.json`` and are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text

from simsql import Fingerprinter
from simsql.fingerprint import Background
from simsql.queries.wide import probe_budget
from simsql.schema.names import WIDE_LAYOUT
from simsql.text.signature import BlockLayout, Signature, probe_values

from .manpages import CorpusUnavailable
from .originality import CORPUS_UNAVAILABLE, benchmark_fingerprinter, corpus, disguised, filler
from .probe_budget import BACKGROUND_SAMPLE, LIGHT, SOURCES

RESULTS = Path(__file__).resolve().parent / "results"
LAYOUTS = (WIDE_LAYOUT, BlockLayout(count=10, width=22), BlockLayout(count=10, width=24), BlockLayout(count=9, width=28))
BUDGET_SCALES = (1, 2)
FRESH = 200


def name(layout: BlockLayout) -> str:
    return f"{layout.count} x {layout.width}"


def first_reach(copy: Signature, original: Signature, layout: BlockLayout, budget: int) -> int | None:
    """The rank of the first of ``copy``'s ``budget`` cheapest probes that equals ``original``'s value in its block."""
    theirs = original.blocks(layout)
    return next((rank for rank, (block, value) in enumerate(probe_values(copy, layout, budget=budget)) if theirs[block] == value), None)


def copies_unreached(source: str, lang: str, originals: int, seed: int) -> dict[str, Any]:
    """Light copies no probe reaches, per layout and budget scale, for one corpus (centred signatures)."""
    data = corpus(0, originals, 1000, seed, lang, source)
    base = benchmark_fingerprinter()
    sample = list(filler(data, BACKGROUND_SAMPLE, seed))
    fingerprinter = Fingerprinter(version=base.version, background=Background.fit(sample, base, wide=True))
    stored = [fingerprinter.signature(original) for original in data["originals"]]
    copies = [(fingerprinter.signature(copy), stored[index - 1]) for index, kind, copy in disguised(data, seed) if kind in LIGHT]
    result: dict[str, Any] = {"source": source, "lang": lang, "copies": len(copies), "layouts": {}}
    for layout in LAYOUTS:
        unreached = dict.fromkeys(BUDGET_SCALES, 0)
        for copy, original in copies:
            budget = probe_budget(copy, True)
            rank = first_reach(copy, original, layout, max(BUDGET_SCALES) * budget)
            for scale in BUDGET_SCALES:
                unreached[scale] += rank is None or rank >= scale * budget
        result["layouts"][name(layout)] = {f"unreached_x{scale}": count for scale, count in unreached.items()}
    return result


def stored_values(url: str, schema: str) -> np.ndarray:
    """The 256 bits of every row of the table, as four uint64 columns (word 0 first)."""
    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(text(f'SELECT simhash, simhash_w1, simhash_w2, simhash_w3 FROM "{schema}".bench_wide_docs')).all()
    engine.dispose()
    return np.array(rows, dtype=np.int64).view(np.uint64)


def block_column(words: np.ndarray, layout: BlockLayout, block: int) -> np.ndarray:
    """Block ``block`` of ``layout`` for every row of ``words`` (bit ``j`` of the signature is bit
    ``j % 64`` of word ``j // 64``), as :meth:`Signature.blocks` cuts one signature."""
    values = np.zeros(len(words), dtype=np.uint64)
    for offset, bit in enumerate(layout.bits_of(block)):
        values |= ((words[:, bit // 64] >> np.uint64(bit % 64)) & np.uint64(1)) << np.uint64(offset)
    return values


def rows_read(url: str, schema: str, background_file: Path, seed: int) -> dict[str, Any]:
    """Rows a fresh article's probes reach in the table, per layout and budget scale (p50, p90)."""
    words = stored_values(url, schema)
    data = corpus(1_000_000, 200, 1000, 22)
    base = benchmark_fingerprinter()
    fingerprinter = Fingerprinter(version=base.version, background=Background.load(background_file))
    rng = random.Random(seed)
    fresh = {"pool": rng.sample(data["fresh_shared"], FRESH // 2), "unseen": rng.sample(data["fresh_disjoint"], FRESH // 2)}
    signatures = {population: fingerprinter.signatures_many(texts) for population, texts in fresh.items()}
    result: dict[str, Any] = {"rows": len(words), "layouts": {}}
    for layout in LAYOUTS:
        buckets = []
        for block in range(layout.count):
            values, counts = np.unique(block_column(words, layout, block), return_counts=True)
            buckets.append(dict(zip(values.tolist(), counts.tolist())))
        figures: dict[str, Any] = {"occupied_values_p50": int(statistics.median(len(b) for b in buckets))}
        for population, found in signatures.items():
            for scale in BUDGET_SCALES:
                read = sorted(
                    sum(buckets[block].get(value, 0) for block, value in probe_values(s, layout, budget=scale * probe_budget(s, True)))
                    for s in found if s is not None
                )  # fmt: skip
                figures[f"{population}_x{scale}"] = {"p50": read[len(read) // 2], "p90": read[int(0.9 * len(read))]}
        result["layouts"][name(layout)] = figures
    return result


def report(result: dict[str, Any]) -> None:
    print("copies no probe reaches (light evasions, centred): centred default budget / twice it")
    header = "| corpus | copies | " + " | ".join(name(layout) for layout in LAYOUTS) + " |"
    print(header)
    print("| :-- | --: |" + " --: |" * len(LAYOUTS))
    for corpus_result in result["copies"]:
        cells = [f"{f['unreached_x1']} / {f['unreached_x2']}" for f in corpus_result["layouts"].values()]
        print(f"| {corpus_result['source']} {corpus_result['lang']} | {corpus_result['copies']} | " + " | ".join(cells) + " |")
    if result.get("rows_read"):
        read = result["rows_read"]
        print(f"\nrows a fresh article's probes read, p50 (p90), table of {read['rows']:,} rows; x10 for 10M")
        for population in ("pool", "unseen"):
            for scale in BUDGET_SCALES:
                cells = [f"{f[f'{population}_x{scale}']['p50']:,} ({f[f'{population}_x{scale}']['p90']:,})" for f in read["layouts"].values()]
                print(f"| fresh ({population}), budget x{scale} | " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a PostgreSQL server holding a table benchmarks.scale10m built (rows read: skipped without)")
    parser.add_argument("--schema", default="bench_originality_1m_bg")
    parser.add_argument("--background", type=Path, help="the wide background file the table was built with")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--results", type=Path, default=RESULTS / "block-width.json")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"load_before": list(os.getloadavg()), "layouts": [name(layout) for layout in LAYOUTS]}
    try:
        result["copies"] = [copies_unreached(source, lang, originals, args.seed) for source, lang, originals in SOURCES]
        if args.url and args.background:
            result["rows_read"] = rows_read(args.url, args.schema, args.background, args.seed)
    except CorpusUnavailable as error:
        print(f"corpus unavailable: {error}", file=sys.stderr)
        return CORPUS_UNAVAILABLE
    result["load_after"] = list(os.getloadavg())
    report(result)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
