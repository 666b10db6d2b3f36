"""Experiments that informed a decision of simsql's (issue 8 and after), kept so each can be rerun.

Not the user's benchmark suite (that is :mod:`benchmarks`, ``python -m benchmarks``): each module
here measured something once to choose a default, and research/README.md says what it measured,
what it decided, where its results live and the command that reproduces them. Modules build on
:mod:`benchmarks` (the corpus, the planted edits, the scale sets); nothing in :mod:`benchmarks`
imports from here.
"""
