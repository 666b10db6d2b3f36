"""How to cut the wide signature into indexed blocks: what each layout costs and what it reaches.

    python -m benchmarks.wide_layout --rows 20000

For each candidate layout (``count`` blocks of ``width`` bits), two measurements:

* **reach**: the share of disguised copies of real man pages (header and footer, 2% and 5%
  substitutions, a sentence in, shuffled lines with 1% substitutions and boilerplate, a 60%
  excerpt) whose original shares a block value with one of the copy's ``budget`` cheapest
  margin-directed probes (``simsql.text.signature.probes``): the index stage's recall, before text;
* **cost** on PostgreSQL: a table of ``rows`` signatures with one generated ``integer`` column
  per block (as ``WideSimHashMixin`` stores them) and one btree each: heap and index bytes per
  row, index writes per insert, and the insert rate.

Results go to ``benchmarks/results/wide-layout.json`` and are printed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

import simsql
import simsql.bits
from simsql.dialects import wide_block_sql
from simsql.text.signature import BlockLayout, Signature, probes

from .corpus import assembled_articles, english_documents, paragraphs
from .originality import DEFAULT_URL, disguise

RESULTS = Path(__file__).resolve().parent / "results"
LAYOUTS = (BlockLayout(12, 20), BlockLayout(8, 20), BlockLayout(16, 16), BlockLayout(10, 24), BlockLayout(8, 30))
KINDS = ("header_footer", "sub_2", "sub_5", "sentence_in", "lines_mix", "excerpt_60")


def reach(pairs: Sequence[tuple[str, Signature, Signature]], layout: BlockLayout, budget: int) -> dict[str, float]:
    found: dict[str, list[bool]] = {}
    for kind, original, copy in pairs:
        blocks = original.blocks(layout)
        hit = any(blocks[p.block] == p.value for p in probes(copy, layout, budget=budget))
        found.setdefault(kind, []).append(hit)
    return {kind: sum(hits) / len(hits) for kind, hits in found.items()}


def _block_sql(words: Sequence[str], layout: BlockLayout, index: int) -> str:
    """``simsql.dialects.wide_block_sql`` of ``layout`` (it takes any layout now)."""
    return wide_block_sql(words, index, cast=True, layout=layout)


def cost(url: str, layout: BlockLayout, signatures: Sequence[Signature]) -> dict[str, Any]:
    engine = create_engine(url)
    table = f"bench_layout_{layout.count}x{layout.width}"
    words = ["w0", "w1", "w2", "w3"]
    blocks = ", ".join(f"v{i} integer GENERATED ALWAYS AS ({_block_sql(words, layout, i)}) STORED" for i in range(layout.count))
    rows = [{f"w{k}": simsql.bits.to_signed(s.words[k]) for k in range(4)} | {"id": i} for i, s in enumerate(signatures)]
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {table}"))
        connection.execute(text(f"CREATE TABLE {table} (id integer PRIMARY KEY, w0 bigint, w1 bigint, w2 bigint, w3 bigint, {blocks})"))
        for i in range(layout.count):
            connection.execute(text(f"CREATE INDEX {table}_v{i} ON {table} (v{i})"))
    started = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(text(f"INSERT INTO {table} VALUES (:id, :w0, :w1, :w2, :w3)"), rows)
    rate = len(rows) / (time.perf_counter() - started)
    with engine.begin() as connection:
        size = lambda name: connection.execute(text(f"SELECT pg_relation_size('{name}')")).scalar_one()  # noqa: E731
        heap, indexes = size(table), sum(size(f"{table}_v{i}") for i in range(layout.count))
        connection.execute(text(f"DROP TABLE {table}"))
    engine.dispose()
    return {"heap_bytes_per_row": heap / len(rows), "block_index_bytes_per_row": indexes / len(rows),
            "index_writes_per_insert": layout.count + 1, "insert_rows_per_s": rate}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--originals", type=int, default=100)
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args(argv)
    docs = [doc for doc in english_documents() if len(doc.text) <= 30_000]
    rng = random.Random(22)
    chosen = rng.sample(docs, args.originals)
    donors = [doc.text.split("\n\n")[0] for doc in rng.sample(docs, 200)]
    fingerprinter = simsql.Fingerprinter()
    pairs = []
    for index, doc in enumerate(chosen):
        for kind in KINDS:
            copy = disguise(kind, doc.text, random.Random(f"{index}/{kind}"), donors)
            pairs.append((kind, fingerprinter.signature(doc.text), fingerprinter.signature(copy)))
    articles = assembled_articles(paragraphs(docs), args.rows, 22, min_chars=500, max_chars=1500)  # distinct rows
    stored = [s for s in fingerprinter.signatures_many(articles, empty="none") if s]
    result = {
        f"{layout.count}x{layout.width}": {"reach": reach(pairs, layout, args.budget), **cost(args.url, layout, stored)}
        for layout in LAYOUTS
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "wide-layout.json").write_text(json.dumps(result, indent=2) + "\n")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
