"""``simsql demo``: the whole job on real text, with no server to set up.

The corpus is documentation that exists wherever simsql is installed: the docstrings of
Python's standard library, the language reference that ``help()`` shows (``pydoc_data``), and
the docstrings of SQLAlchemy (a dependency). Sources are read with :mod:`ast`, never imported,
so no module runs any code. Some articles get planted copies with a known answer (a few words
changed, a "Recommended for you" box added, paragraphs reordered), and the demo reports how
many of them simsql finds.

There is no Chinese in the corpus: no installed package ships Chinese prose (jieba ships only
dictionaries), and the demo downloads nothing.

A front end: it uses simsql's public API and configures no logging. Its modules, lowest first:
:mod:`.progress` (bars on stderr), :mod:`.corpus` (reading the documentation),
:mod:`.planting` (copies with a known answer), :mod:`.database` (the demo's table, loading,
one demo at a time), :mod:`.report` (formats), :mod:`.sections` (what each query found) and
:mod:`.run`, the only one that writes the report to its output stream.
"""

from __future__ import annotations

from .corpus import ARTICLE_CHARS, MAX_ARTICLES, MIN_ARTICLE_CHARS, MIN_DOCSTRING_CHARS, load_corpus
from .database import SCHEMA, DemoArticle
from .planting import BOILERPLATE_SHARE, EDITED_SHARE, REORDERED_SHARE, SEED, PlantedCopy, plant_copies
from .run import main, run_demo
from .sections import FRESH_COPIES, MAX_DISTANCE, NEW_TEXT

__all__ = [
    "ARTICLE_CHARS", "BOILERPLATE_SHARE", "EDITED_SHARE", "FRESH_COPIES", "MAX_ARTICLES", "MAX_DISTANCE",
    "MIN_ARTICLE_CHARS", "MIN_DOCSTRING_CHARS", "NEW_TEXT", "REORDERED_SHARE", "SCHEMA", "SEED",
    "DemoArticle", "PlantedCopy", "load_corpus", "main", "plant_copies", "run_demo",
]  # fmt: skip
