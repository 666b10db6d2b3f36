"""simsql ships ``py.typed``: users' type checkers read its annotations as a promise, so its own
code must type-check (mypy, the configuration in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    stdout, stderr, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path), str(ROOT / "simsql")]
    )
    assert status == 0, stdout + stderr


SQLMODEL_PROBE = '''
from sqlmodel import Field, Session, SQLModel, create_engine, select

import simsql.sqlmodel


class Story(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    body: str


with Session(create_engine("sqlite://")) as session:
    for story, distance, similarity in session.exec(simsql.sqlmodel.most_similar(select(Story), "text", limit=5, probes=4)):
        reveal_type(story)
        reveal_type(distance)
        reveal_type(similarity)
    simsql.sqlmodel.most_similar(select(Story), "text", limitt=5)
'''


def test_the_sqlmodel_face_is_the_definition_typed_for_exec(tmp_path: Path) -> None:
    """``simsql.sqlmodel.most_similar`` is ``simsql.most_similar`` itself (so it takes every
    parameter the definition takes, ``probes`` included, and always will), and a type checker
    sees SQLModel rows of ``(Model, int, float)`` and refuses a parameter the definition lacks."""
    pytest.importorskip("sqlmodel")
    api = pytest.importorskip("mypy.api")
    import simsql
    import simsql.sqlmodel

    assert simsql.sqlmodel.most_similar is simsql.most_similar
    probe = tmp_path / "probe.py"
    probe.write_text(SQLMODEL_PROBE)
    stdout, stderr, _ = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"), str(probe)])
    assert 'Revealed type is "probe.Story"' in stdout, stdout + stderr
    assert 'Revealed type is "builtins.int"' in stdout or 'Revealed type is "int"' in stdout, stdout
    assert 'Revealed type is "builtins.float"' in stdout or 'Revealed type is "float"' in stdout, stdout
    assert 'Unexpected keyword argument "limitt"' in stdout, stdout
