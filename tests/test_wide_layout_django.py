"""The wide block layout on Django (issue 43): a model inheriting ``wide_simhash_model("10x24")``
gets its ten generated block columns from ``makemigrations`` (``AddSimHash(..., wide_blocks='10x24')``),
the registry records the layout, the queryset's ``find_original`` and ``near_duplicates`` probe
them, and migrating back leaves nothing. The fixtures are tests/test_django.py's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

import simsql
from simsql.text.errors import SchemaError
from tests.test_django import TOPICS, _database_name, alias, django_project  # noqa: F401  fixtures

from .test_wide_layout import WIDER


def test_the_layout_model_and_operation_check_and_carry_it(django_project: dict[str, str]) -> None:
    from simsql.django.models import WideSimHashModel, layout_of, wide_simhash_model
    from simsql.django.operations import AddSimHash
    from tests.django_project.shelf.models import Leaf

    assert wide_simhash_model("10x24") is wide_simhash_model(WIDER) and wide_simhash_model("8x20") is WideSimHashModel
    assert layout_of(Leaf) == WIDER and [f.name for f in Leaf._meta.fields if f.name.startswith("simhash_v")][-1] == "simhash_v9"
    assert AddSimHash("Leaf", ["text"], wide_blocks="10x24").deconstruct()[2] == {"source": ["text"], "wide_blocks": "10x24"}
    assert "wide_blocks" not in AddSimHash("Leaf", ["text"]).deconstruct()[2]
    with pytest.raises(SchemaError, match="at least 8 blocks"):
        wide_simhash_model("6x24")
    with pytest.raises(SchemaError, match="16 to 31 bits"):
        AddSimHash("Leaf", ["text"], wide_blocks="10x40")
    with pytest.raises(SchemaError, match="pass wide=True too"):
        AddSimHash("Leaf", ["text"], wide=False, wide_blocks="10x24")


def test_a_django_model_of_another_layout_migrates_answers_and_migrates_back(
    alias: str, django_project: dict[str, str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.management import call_command
    from django.test.utils import override_settings

    from tests.django_project.shelf.models import Leaf

    package = f"shelf_layout_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    url = make_url(django_project[alias]).set(database=_database_name(django_project[alias]))
    with override_settings(MIGRATION_MODULES={"shelf": package}):
        call_command("makemigrations", "shelf", verbosity=0)
        written = "".join(path.read_text() for path in (tmp_path / package).glob("0*.py"))
        assert "wide_blocks='10x24'" in written or 'wide_blocks="10x24"' in written
        call_command("makemigrations", "shelf", "--check", "--dry-run", verbosity=0)
        engine = create_engine(url, poolclass=NullPool)
        try:
            call_command("migrate", "shelf", database=alias, verbosity=0)
            manager = Leaf.objects.using(alias)
            manager.bulk_create([Leaf(text=body) for body in TOPICS])
            for row in manager.all():
                row.save(using=alias)  # bulk_create bypasses save(): fingerprint through the model
            with engine.connect() as connection:
                entry = simsql.store.registry.read(connection, "shelf_leaf")
                assert entry is not None and entry.mode == "columns+wide10x24"
                stored = connection.execute(text("SELECT text, simhash_v0, simhash_v9 FROM shelf_leaf")).all()
            fingerprinter = simsql.Fingerprinter(version=3)
            for body, first, last in stored:
                blocks = fingerprinter.signature(body).blocks(WIDER)
                assert (first, last) == (blocks[0], blocks[9])
            match = manager.find_original(TOPICS[2].upper() + " The minister said so on Tuesday.")
            assert match is not None and match.row.text == TOPICS[2]
            assert manager.find_original("Boats raced along the coast all summer in fine weather.") is None
            Leaf(text=TOPICS[2] + " The minister said so on Tuesday.").save(using=alias)
            pairs = manager.near_duplicates(probe_radius=1)
            assert [(manager.get(pk=p.a).text, manager.get(pk=p.b).text[: len(TOPICS[2])]) for p in pairs] == [(TOPICS[2], TOPICS[2])]
        finally:
            call_command("migrate", "shelf", "zero", database=alias, verbosity=0)
            engine.dispose()
        with engine.connect() as connection:
            assert simsql.store.registry.read(connection, "shelf_leaf") is None
