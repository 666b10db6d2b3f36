"""Abstract Django models with simsql's columns, and the queryset that queries them.

::

    from .models import WideSimHashModel

    class Article(WideSimHashModel):
        simhash_source = ("title", "body")   # joined by newlines, in this order
        title = models.CharField(max_length=200)
        body = models.TextField()

The columns are the ones :func:`simsql.attach_table` adds (``simsql.django.operations.AddSimHash``
in a migration): ``simhash``, its digest ``simhash_src``, four 16-bit blocks derived by the
database, and, on ``WideSimHashModel``, the wide signature's words 1-3 and its eight blocks.
``save()`` (and ``bulk_create``, and ``bulk_update`` of a source field) writes the fingerprint,
digest and words simsql's SQLAlchemy mixin writes for the same text; any other writer
(``QuerySet.update``, raw SQL) changes text the table's trigger sees, which clears the
fingerprint until ``manage.py simsql backfill`` fills it again. Never a stale fingerprint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from asgiref.sync import sync_to_async
from django.db import models, router
from sqlalchemy import Select, select

import simsql

from ..lifecycle.lists import ListsResult, drop_lists, fit_lists, place_lists
from ..queries import DEFAULT_PROBE_RADIUS
from ..queries.targets import MAX_LIMIT, check_limit
from ..schema.names import WIDE_LAYOUT, Names, block_layout, layout_text
from ..store import registry
from ..store.progress import Progress
from ..store.storage import join_text, source_names, stored_for_text
from ..text.bits import check_fingerprint
from ..text.containment import MIN_CONTAINMENT
from ..text.errors import EmptyDocument, SchemaError
from ..text.fingerprint import DEFAULT, DEFAULT_WIDE, Fingerprinter
from ..text.signature import BlockLayout
from . import connection
from .expressions import Block, HammingDistance, Similarity, WideBlock, nulls_last
from .fields import DigestField, SimHashField
from .mirror import mirror_for, primary_key
from .statements import SimsqlRows, queryset_rows, rows_of

NAMES = Names("simsql_django", wide=True)
"""The column names (simsql's default prefix, ``simhash``): the same on every table."""
WORDS = NAMES.signature_words


def fingerprinter_of(model: type[models.Model]) -> Fingerprinter:
    """The model's configuration: ``simhash_fingerprinter``, else simsql's default for its kind."""
    default = DEFAULT_WIDE if is_wide(model) else DEFAULT
    found = getattr(model, "simhash_fingerprinter", None) or default
    if not isinstance(found, Fingerprinter):
        raise TypeError(f"{model.__name__}.simhash_fingerprinter must be a simsql.Fingerprinter, got {type(found).__name__}")
    return found


def is_wide(model: type[models.Model]) -> bool:
    return issubclass(model, WideSimHashModel)


def layout_of(model: type[models.Model]) -> BlockLayout:
    """The wide block layout of a model (``simhash_wide_blocks``, set by :func:`wide_simhash_model`; 8 x 20 without)."""
    return block_layout(getattr(model, "simhash_wide_blocks", None))


def source_of(model: type[models.Model]) -> tuple[str, ...]:
    """The model's ``simhash_source`` as a tuple of field names (checked by ``manage.py check``)."""
    return source_names(getattr(model, "simhash_source", ()), f"{model.__name__}.simhash_source")


def text_of(instance: models.Model) -> str | None:
    """The text a row is fingerprinted from: its non-NULL source values, one per line."""
    values = []
    for name in source_of(type(instance)):
        value = getattr(instance, name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{type(instance).__name__}.{name} must hold str to be fingerprinted, got {type(value).__name__}")
        values.append(value)
    return join_text(values)


def stored_values(instance: models.Model) -> dict[str, Any]:
    """Field name -> value simsql stores for the row's text: the fingerprint, the digest of the
    text and, on a wide model, the signature's words 1-3 (all None for text without words), as
    :meth:`simsql.Binding.stored_row` computes them for a SQLAlchemy model."""
    model = type(instance)
    return stored_for_text(fingerprinter_of(model), NAMES.with_wide(is_wide(model)), text_of(instance))


def fingerprint_of(model: type[models.Model], target: object) -> tuple[int, Any]:
    """(fingerprint, primary key to leave out) of a text, a fingerprint (int) or a row."""
    if isinstance(target, str):
        return fingerprinter_of(model).fingerprint(target), None
    if isinstance(target, int) and not isinstance(target, bool):
        return check_fingerprint(target, "target"), None
    if isinstance(target, model):
        text = text_of(target)
        if text is None:
            raise EmptyDocument(f"row {target.pk!r} of {model._meta.db_table} has no text to compare")
        return fingerprinter_of(model).fingerprint(text), target.pk
    raise TypeError(
        f"target must be text (str), a fingerprint (int) or an instance of {model.__name__}, got {type(target).__name__}"
    )


def mirror_of(model: type[models.Model]) -> type:
    """The model's SQLAlchemy mirror (:mod:`simsql.django.mirror`), what simsql's queries take."""
    return mirror_for(model, source_of(model), fingerprinter_of(model), is_wide(model), layout_of(model))


def submitted_text(model: type[models.Model], submitted: object) -> str:
    """The text of the originality check: ``submitted`` itself, or the text an unsaved instance
    of ``model`` would be stored with; a saved row is refused (its own row would be its original)."""
    if isinstance(submitted, str):
        return submitted
    if not isinstance(submitted, model):
        raise TypeError(f"find_original() checks a text (str) or an unsaved {model.__name__}, got {type(submitted).__name__}")
    instance = submitted
    if not instance._state.adding:  # loaded from the database, or saved
        raise ValueError(
            f"find_original() takes an unsaved {type(instance).__name__} (a submission), got the stored row "
            f"{instance.pk!r}, which would be its own original: build a new instance from the submitted fields"
        )
    text = text_of(instance)
    if text is None:
        raise EmptyDocument(f"this {type(instance).__name__} has no text to check ({', '.join(source_of(type(instance)))} are empty)")
    return text


def check_configuration(model: type[models.Model], alias: str) -> None:
    """Refuse to write fingerprints of another configuration than the one simsql's registry
    records for the table (:class:`~simsql.text.errors.ConfigMismatch`, before anything is written),
    as the SQLAlchemy mixin refuses; the answer is cached for a short while per database. Read
    on the alias's own connection, in its transaction."""
    with connection.borrowed(alias, atomic=False) as borrowed:
        registry.check(borrowed, model._meta.db_table, None, fingerprinter_of(model).config_id)


def check_exact(exact: object) -> None:
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, got {type(exact).__name__} {exact!r}")


class SimHashQuerySet(models.QuerySet):
    """Similarity queries in Django's idiom; each returns a queryset that composes with
    ``.filter()``, slicing and the async iteration of Django's ORM. The statements are simsql's
    own (:mod:`simsql.django.statements`): the same answers as its SQLAlchemy functions."""

    def fingerprint_of(self, target: object) -> tuple[int, Any]:
        """(fingerprint, primary key to leave out) of a text, a fingerprint (int) or a row."""
        return fingerprint_of(self.model, target)

    def within(self, target: object, max_distance: int = 3) -> SimHashQuerySet:
        """Rows within ``max_distance`` bits of ``target``: :func:`simsql.similar_to`'s statement
        (exact; a row target is not left out)."""
        fingerprint, _ = self.fingerprint_of(target)
        return self.filter(pk__in=within_rows(self.model, fingerprint, max_distance))

    def most_similar(
        self, target: object, limit: int | None = 10, max_distance: int | None = None, *,
        probe_radius: int = DEFAULT_PROBE_RADIUS, exact: bool = True, scan: bool = True, probes: int | None = None,
        recall: float | None = None,
    ) -> SimHashQuerySet:  # fmt: skip
        """The rows nearest ``target``, annotated with ``distance`` (bits) and ``similarity``
        (``1 - distance / 64``), nearest first, ties by primary key: :func:`simsql.most_similar`'s
        statement and answer, with its arguments (``exact``, ``scan``, ``probe_radius``,
        ``probes``, ``recall``), over the rows of this queryset; a row target is left out. ``limit=None``
        ranks every row and leaves the slicing to you (filter further first)."""
        check_exact(exact)
        if limit is not None:
            check_limit(limit)
        fingerprint, key = self.fingerprint_of(target)
        mirror = mirror_of(self.model)
        filtered = bool(self.query.where)
        statement: Select[Any] = select(mirror).where(queryset_rows(mirror)) if filtered else select(mirror)
        ranked = simsql.most_similar(
            statement, fingerprint, MAX_LIMIT if limit is None else limit, max_distance, None if key is None else [key],
            probe_radius=probe_radius, exact=exact, scan=scan, probes=probes, recall=recall,
        )  # fmt: skip
        rows = self.filter(pk__in=rows_of(ranked, mirror, self.order_by() if filtered else None))
        rows = rows.annotate(
            distance=HammingDistance(NAMES.fingerprint, fingerprint), similarity=Similarity(NAMES.fingerprint, fingerprint)
        ).order_by("distance", "pk")
        return rows[:limit] if limit is not None else rows

    def order_by(self, *field_names: Any) -> SimHashQuerySet:
        """Django's ``order_by``; a distance or similarity (any expression of
        :class:`~simsql.django.expressions.HammingDistance`) puts NULL last either way: a row
        without a fingerprint never ranks before one with it, on every server."""
        return super().order_by(*(nulls_last(self.query.annotations, name) for name in field_names))  # type: ignore[no-any-return]

    def find_original(self, text: str | models.Model, **options: Any) -> simsql.Match | None:
        """:func:`simsql.find_original` on the model's table: the stored row ``text`` copies,
        as a ``Match`` whose ``row`` is the model instance, or None. ``text`` may be an unsaved
        instance (a form's): the text it would be stored with, its ``simhash_source`` joined.
        Options as there. Runs on the database's own connection, in its open transaction."""
        submitted = submitted_text(self.model, text)
        alias = self._whole_table("find_original")
        with connection.session(alias) as session:
            match = simsql.find_original(session, mirror_of(self.model), submitted, **options)
            if match is None:
                return None
            row = self.model._base_manager.using(alias).get(pk=getattr(match.row, self.model._meta.pk.name))
        return simsql.Match(row, match.distance, match.similarity)

    async def afind_original(self, text: str | models.Model, **options: Any) -> simsql.Match | None:
        """:meth:`find_original` from async code."""
        return await sync_to_async(self.find_original)(text, **options)

    def near_duplicates(
        self, max_distance: int = 3, *, by_text: bool | None = None, min_containment: float = MIN_CONTAINMENT,
        wide_distance: int | None = None, probe_radius: int | None = None, progress: Progress | None = None,
    ) -> list[simsql.DuplicatePair]:  # fmt: skip
        """:func:`simsql.near_duplicates` on the model's table, with its arguments: pairs of
        primary keys (on a wide table, confirmed by text)."""
        with connection.session(self._whole_table("near_duplicates")) as session:
            return simsql.near_duplicates(
                session, mirror_of(self.model), max_distance, by_text=by_text, min_containment=min_containment,
                wide_distance=wide_distance, probe_radius=probe_radius, progress=progress,
            )  # fmt: skip

    def duplicate_groups(
        self, max_distance: int = 3, *, by_text: bool | None = None, min_containment: float = MIN_CONTAINMENT,
        wide_distance: int | None = None, probe_radius: int | None = None, progress: Progress | None = None,
    ) -> list[list[Any]]:  # fmt: skip
        """:func:`simsql.duplicate_groups` on the model's table, with its arguments: groups of primary keys."""
        with connection.session(self._whole_table("duplicate_groups")) as session:
            return simsql.duplicate_groups(
                session, mirror_of(self.model), max_distance, by_text=by_text, min_containment=min_containment,
                wide_distance=wide_distance, probe_radius=probe_radius, progress=progress,
            )  # fmt: skip

    async def anear_duplicates(self, max_distance: int = 3, **options: Any) -> list[simsql.DuplicatePair]:
        """:meth:`near_duplicates` from async code (the same arguments)."""
        return await sync_to_async(self.near_duplicates)(max_distance, **options)

    async def aduplicate_groups(self, max_distance: int = 3, **options: Any) -> list[list[Any]]:
        """:meth:`duplicate_groups` from async code (the same arguments)."""
        return await sync_to_async(self.duplicate_groups)(max_distance, **options)

    def bulk_create(self, objs: Iterable[Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Django's ``bulk_create``, each row's fingerprint computed first (as ``save()``)."""
        objs = list(objs)
        check_configuration(self.model, self.db)
        for obj in objs:
            obj.simsql_fill()
        return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(self, objs: Iterable[Any], fields: Sequence[str], *args: Any, **kwargs: Any) -> int:
        """Django's ``bulk_update``; rows whose source fields are updated get their fingerprint too."""
        objs = list(objs)
        if set(fields) & set(source_of(self.model)):
            check_configuration(self.model, self.db)
            written: list[str] = []
            for obj in objs:
                written = list(obj.simsql_fill())
            fields = [*fields, *[name for name in written if name not in fields]]
        return super().bulk_update(objs, fields, *args, **kwargs)

    def fit_lists(self, **options: Any) -> ListsResult:
        """:func:`simsql.lists.fit_lists` on the model's table (options as there), on the
        database's own connection; it commits as it goes, so it refuses inside an atomic block."""
        return fit_lists(self._committing("fit_lists"), self.model._meta.db_table, **options)

    def place_lists(self) -> int:
        """:func:`simsql.lists.place_lists`: place the rows no live list holds (``save()`` leaves
        new rows unplaced; every query reads them until then)."""
        return place_lists(self._committing("place_lists"), self.model._meta.db_table)

    def drop_lists(self) -> bool:
        """:func:`simsql.lists.drop_lists`: the lists' generations and centres, and the index the
        fit added (the model's own ``simhash_part`` column stays: a migration's to remove)."""
        return drop_lists(self._committing("drop_lists"), self.model._meta.db_table)

    def _committing(self, method: str) -> Any:
        """The engine of the database's own connection for work that commits as it goes."""
        alias = self._whole_table(method)
        connection.refuse_in_atomic(alias, f"{self.model.__name__}.objects.{method}()", "call it outside the block")
        return connection.engine_for(alias)

    def _whole_table(self, method: str) -> str:
        """The database of a question about the whole table; a filtered queryset is refused
        (its filter would be silently ignored)."""
        if self.query.where:
            raise ValueError(f"{method}() reads the whole table of {self.model.__name__}: call it on the manager, not a filtered queryset")
        return self.db


def within_rows(model: type[models.Model], fingerprint: int, max_distance: object) -> SimsqlRows:
    """The primary keys :func:`simsql.similar_to` finds within ``max_distance`` bits."""
    if max_distance is None:
        raise TypeError("max_distance must be an int in 0..64, got None")
    mirror = mirror_of(model)
    return rows_of(select(primary_key(mirror)).where(simsql.similar_to(mirror, fingerprint, max_distance)), mirror)  # type: ignore[arg-type]


SimHashManager = models.Manager.from_queryset(SimHashQuerySet)


@SimHashField.register_lookup
class Within(models.Lookup):
    """``filter(simhash__within=(target, max_distance))`` (or ``simhash__within=target``: 3
    bits): :meth:`SimHashQuerySet.within` as a field lookup, so it goes in ``Q`` objects and
    across relations (``filter(article__simhash__within=...)``). The target is a text, a
    fingerprint or a row, as there; the arguments are checked when the filter is built."""

    lookup_name = "within"
    prepare_rhs = False

    def get_prep_lookup(self) -> Any:
        target, max_distance = within_arguments(self.rhs)
        model = self.lhs.output_field.model
        fingerprint, _ = fingerprint_of(model, target)
        return within_rows(model, fingerprint, max_distance)

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        model = self.lhs.output_field.model
        key_sql, key_params = compiler.compile(model._meta.pk.get_col(self.lhs.alias))
        rows_sql, rows_params = compiler.compile(self.rhs)
        return f"{key_sql} IN ({rows_sql})", [*key_params, *rows_params]


def within_arguments(value: object) -> tuple[object, object]:
    """(target, max_distance) of a ``simhash__within`` value: a target, or a pair."""
    if not isinstance(value, tuple):
        return value, 3
    if len(value) != 2:
        raise ValueError(f"simhash__within takes a target or a (target, max_distance) pair, got a tuple of {len(value)}")
    return value[0], value[1]


class SimHashModel(models.Model):
    """simsql's 64-bit fingerprint columns (algorithm version 2, as ``simsql.SimHashMixin``).
    Declare ``simhash_source``; attach the table with ``AddSimHash(..., wide=False)``."""

    simhash_source: ClassVar[Sequence[str]] = ()
    simhash_fingerprinter: ClassVar[Fingerprinter | None] = None

    simhash = SimHashField(null=True, editable=False)
    simhash_src = DigestField(null=True, editable=False)
    simhash_b0 = models.GeneratedField(expression=Block("simhash", 0), output_field=models.IntegerField(), db_persist=True)
    simhash_b1 = models.GeneratedField(expression=Block("simhash", 1), output_field=models.IntegerField(), db_persist=True)
    simhash_b2 = models.GeneratedField(expression=Block("simhash", 2), output_field=models.IntegerField(), db_persist=True)
    simhash_b3 = models.GeneratedField(expression=Block("simhash", 3), output_field=models.IntegerField(), db_persist=True)

    objects = SimHashManager()

    class Meta:
        abstract = True

    def simsql_fill(self) -> dict[str, Any]:
        """Set the fingerprint, digest (and words) from the row's text; returns what was set."""
        values = stored_values(self)
        for name, value in values.items():
            setattr(self, name, value)
        return values

    def save(self, *args: Any, **kwargs: Any) -> None:
        update_fields = kwargs.get("update_fields")
        if update_fields is None or set(update_fields) & set(source_of(type(self))):
            check_configuration(type(self), kwargs.get("using") or router.db_for_write(type(self), instance=self))
            written = self.simsql_fill()
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, *written}
        super().save(*args, **kwargs)


def fill_raw_rows(sender: type, instance: models.Model, raw: bool = False, using: str | None = None, **kwargs: Any) -> None:
    """``pre_save`` of a row saved *raw* (``loaddata``, a ``TestCase``'s ``fixtures``), which
    skips ``save()``: its fingerprint is computed from its text all the same, so fixture rows are
    found like saved ones. Connected by the app's ``ready()``."""
    if raw and isinstance(instance, SimHashModel):
        check_configuration(sender, using or router.db_for_write(sender, instance=instance))
        instance.simsql_fill()


class ListsModel(models.Model):
    """Partition lists (:mod:`simsql.lists`) for a :class:`SimHashModel` or
    :class:`WideSimHashModel`: the list column ``simhash_part`` (NULL: not placed yet, read by
    every query). ``Model.objects.fit_lists()`` fits the lists and adds its index,
    ``most_similar(..., probes=N)`` reads them. Inherit it first:
    ``class Article(ListsModel, WideSimHashModel)``."""

    simhash_part = models.IntegerField(null=True, editable=False)

    class Meta:
        abstract = True


def _wide_block(index: int, layout: str | None = None) -> models.GeneratedField:
    expression = WideBlock(*WORDS, index=index) if layout is None else WideBlock(*WORDS, index=index, layout=layout)
    return models.GeneratedField(expression=expression, output_field=models.IntegerField(), db_persist=True)


class WideSimHashModel(SimHashModel):
    """:class:`SimHashModel` plus the wide 256-bit originality signature (algorithm version 3,
    as ``simsql.WideSimHashMixin``; what ``AddSimHash`` attaches by default)."""

    simhash_w1 = SimHashField(null=True, editable=False)
    simhash_w2 = SimHashField(null=True, editable=False)
    simhash_w3 = SimHashField(null=True, editable=False)
    simhash_v0 = _wide_block(0)
    simhash_v1 = _wide_block(1)
    simhash_v2 = _wide_block(2)
    simhash_v3 = _wide_block(3)
    simhash_v4 = _wide_block(4)
    simhash_v5 = _wide_block(5)
    simhash_v6 = _wide_block(6)
    simhash_v7 = _wide_block(7)

    class Meta:
        abstract = True


_LAYOUT_MODELS: dict[BlockLayout, type[WideSimHashModel]] = {}


def wide_simhash_model(wide_blocks: str | BlockLayout) -> type[WideSimHashModel]:
    """:class:`WideSimHashModel` with its blocks cut as ``wide_blocks`` says (``"10x24"``, or a
    :class:`~simsql.text.signature.BlockLayout`: the ``wide_blocks`` of :func:`simsql.attach_table`),
    an abstract model to inherit instead::

        class Article(wide_simhash_model("10x24")):
            simhash_source = ("title", "body")

    ``makemigrations`` then writes ``AddSimHash(..., wide_blocks="10x24")``. At least 8 blocks
    (:class:`WideSimHashModel` declares ``simhash_v0..v7``); one class per layout."""
    layout = block_layout(wide_blocks)
    if layout.count < WIDE_LAYOUT.count:
        raise SchemaError(f"wide_simhash_model() takes a layout of at least {WIDE_LAYOUT.count} blocks, got {layout_text(layout)}")
    if layout == WIDE_LAYOUT:
        return WideSimHashModel
    found = _LAYOUT_MODELS.get(layout)
    if found is None:
        text = layout_text(layout)
        attributes: dict[str, Any] = {
            "__module__": __name__,
            "__qualname__": f"WideSimHashModel{text}",
            "simhash_wide_blocks": text,
            "Meta": type("Meta", (), {"abstract": True}),
            **{name: _wide_block(index, text) for index, name in enumerate(NAMES.with_wide(True, layout).wide_blocks)},
        }
        found = _LAYOUT_MODELS[layout] = type(f"WideSimHashModel{text}", (WideSimHashModel,), attributes)
    return found


__all__ = [
    "ListsModel", "SimHashManager", "SimHashModel", "SimHashQuerySet", "WideSimHashModel", "Within", "fill_raw_rows",
    "stored_values", "wide_simhash_model",
]  # fmt: skip
