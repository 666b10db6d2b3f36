"""simsql for Django: fingerprints on a Django model, queries as querysets, migrations, a command.

Add ``"simsql.django"`` to ``INSTALLED_APPS``, inherit :class:`simsql.django.models.WideSimHashModel`
(or ``SimHashModel`` for the 64 bits alone), name the text in ``simhash_source``, and attach the
table in a migration with :class:`simsql.django.operations.AddSimHash` (docs/django.md).

A front end like :mod:`simsql.alembic`: it calls simsql's one definition of each query and
operation, over SQLAlchemy, on Django's own connection of the database and inside its open
transaction (:mod:`.connection`); simsql opens no connection of its own. Nothing here is
imported by ``import simsql``: Django is optional (``pip install simsql[django]``). The modules,
one concern each: :mod:`.connection` (Django's connection as SQLAlchemy's), :mod:`.mirror` (a
Django model as the mapped class simsql's queries take), :mod:`.statements` (simsql's statements
inside a Django query), :mod:`.fields` (the column types), :mod:`.expressions` (Hamming distance,
similarity and blocks as Django expressions), :mod:`.models` (the abstract models, their
queryset and save), :mod:`.operations` (migrations), :mod:`.checks` (``manage.py check``),
:mod:`.autodetector` (``makemigrations`` writing ``AddSimHash``) and the ``simsql`` management
command.
"""
