"""Build ``simsql/data/prior-1.tsv.gz``, the built-in IDF prior of ``weighting="prior"``.

The prior comes from general-purpose sources only, never from the texts simsql is evaluated on:

* Chinese: jieba 0.42.1's own ``jieba/analyse/idf.txt`` (MIT), entries with IDF below ``CUT``;
* English (and other non-Han words): wordfreq 3.1.1's English frequencies (``top_n_list("en",
  100000)``), turned into the IDF of a word in a document of ``L`` tokens,
  ``-ln(1 - exp(-L * p))``, which puts English on jieba's scale ("the" 0.88 like "的" 0.88;
  "system" 5.6 like "系统" 5.0).

Words rarer than ``CUT`` are left out: every feature missing from the table weighs ``DEFAULT``,
which is close to their IDF anyway, and keeps the file small. Words are normalised as simsql
normalises text and kept only if they are one simsql token. The output is deterministic (sorted,
two decimals, gzip without a timestamp); its SHA-256 is pinned in ``simsql/weighting.py``, so a
rebuilt file that differs by one byte is refused rather than silently changing fingerprints.

Run: ``pip install wordfreq==3.1.1 jieba==0.42.1 && python -m research.build_prior``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import os
import sys
from pathlib import Path

L = 10.0
CUT = 10.0
DEFAULT = 11.0
OUT = Path(__file__).resolve().parent.parent / "simsql" / "data" / "prior-1.tsv.gz"


def build() -> bytes:
    import jieba.analyse
    import wordfreq

    from simsql.text import tokenize
    table: dict[str, float] = {}
    path = os.path.join(os.path.dirname(jieba.analyse.__file__), "idf.txt")
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 2 and float(parts[1]) < CUT:
                table[tokenize.normalize(parts[0])] = round(float(parts[1]), 2)
    for word in wordfreq.top_n_list("en", 100_000):
        idf = -math.log(-math.expm1(-L * wordfreq.word_frequency(word, "en")))
        norm = tokenize.normalize(word)
        tokens = [t for chunk in tokenize.word_tokens(norm, "bigrams") for t in chunk]
        if idf < CUT and len(tokens) == 1 and norm not in table:
            table[norm] = round(idf, 2)
    lines = [f"# simsql IDF prior 1: jieba 0.42.1 idf.txt + wordfreq 3.1.1 en (L={L}); default {DEFAULT}\n"]
    lines += [f"{word}\t{value:.2f}\n" for word, value in sorted(table.items())]
    raw = "".join(lines).encode("utf-8")
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    return buffer.getvalue()


def main() -> int:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(data)
    raw = gzip.decompress(data)
    words = raw.count(b"\n") - 1
    print(f"{OUT}: {len(data)} bytes, {words} words, sha256 of content {hashlib.sha256(raw).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
