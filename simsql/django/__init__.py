"""simsql for Django: fingerprints on a Django model, queries as querysets, migrations, a command.

Add ``"simsql.django"`` to ``INSTALLED_APPS``, inherit :class:`simsql.django.models.WideSimHashModel`
(or ``SimHashModel`` for the 64 bits alone), name the text in ``simhash_source``, and attach the
table in a migration with :class:`simsql.django.operations.AddSimHash` (docs/django.md).

A front end like :mod:`simsql.alembic`: it uses simsql's public API, and for what only
simsql's SQLAlchemy layer answers (the originality check, deduplication, attach and detach,
the command line) it opens a SQLAlchemy engine on the same database as Django's
(:mod:`simsql.django.bridge`). Nothing here is imported by ``import simsql``: Django is optional
(``pip install simsql[django]``). The modules, one concern each: :mod:`.fields` (the column
types), :mod:`.expressions` (Hamming distance and block probes as Django expressions),
:mod:`.models` (the abstract models, their queryset and save), :mod:`.operations` (migrations),
:mod:`.checks` (``manage.py check``), :mod:`.autodetector` (``makemigrations`` writing
``AddSimHash``), :mod:`.bridge` (the SQLAlchemy engine of a Django database) and the ``simsql``
management command.
"""
