"""The test project's settings, as ``settings.configure`` takes them (tests/test_django.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import make_url


def database(url: str, name: str) -> dict[str, Any]:
    """Django's settings for the database ``name`` on the server of a SQLAlchemy ``url``."""
    parsed = make_url(url)
    mysql = parsed.get_backend_name() in ("mysql", "mariadb")
    host = parsed.query.get("host") or parsed.host or ""
    return {
        "ENGINE": "django.db.backends.mysql" if mysql else "django.db.backends.postgresql",
        "NAME": name,
        "USER": parsed.username or "",
        "PASSWORD": parsed.password or "",
        "HOST": host if isinstance(host, str) else host[0],
        "PORT": str(parsed.port or ""),
        "OPTIONS": {"charset": "utf8mb4"} if mysql else {},
        "TEST": {"NAME": name},
    }


class Router:
    """The SQLite alias takes only the app that checks refuse it (tests of ``manage.py check``)."""

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return (app_label == "sqlite_only") == (db == "sqlite")


def settings(databases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "DATABASES": {**databases, "sqlite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        "DATABASE_ROUTERS": [Router()],
        "INSTALLED_APPS": ["simsql.django", "tests.django_project.news", "tests.django_project.blog", "tests.django_project.shelf"],
        "MIGRATION_MODULES": {"blog": None, "shelf": None},
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "USE_TZ": True,
    }
