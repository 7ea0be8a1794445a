"""Model instances from a SELECT whose SQL is built once per process.

Compiling a queryset is pure Python and runs again for every evaluation: for the
few fixed queries of every API request (the token lookup, the global settings,
the retrieved chunks with their documents) it cost more CPU in the web process
than PostgreSQL spent running them (about 1 ms each of a retrieve request's
~10 ms, knowledge_bench load). ``PreparedSelect`` writes the column lists and
joins once and builds the instances the way the ORM does: the same columns, the
same converters (``from_db_value``), ``Model.from_db`` (deferred fields load
lazily when read), and the related instance cached as ``select_related`` caches it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model
from django.utils.asyncio import async_unsafe

MAIN = "m"
RELATED = "r"


@async_unsafe
def planned_once_cursor(alias: str = DEFAULT_DB_ALIAS):
    """A cursor whose statements PostgreSQL parses and plans once per connection, not per call.

    Django binds parameters in the client, so the server parses and plans every statement
    again: for a retrieve request's statements that was 1.1 ms of planning against 0.8 ms
    of executing (EXPLAIN ANALYZE, best of five). With the parameters bound on the server,
    psycopg prepares each statement on its connection the first time it runs there
    (``prepare_threshold``, config.base.database) and later calls only bind and execute it;
    pooled connections keep their statements from request to request. Only the fixed,
    hot statements use it: their SQL is written for either binding (``%s`` placeholders,
    no parameter where SQL needs a literal).
    """
    db = connections[alias]
    db.ensure_connection()
    with db.wrap_database_errors:
        return db._prepare_cursor(ServerBindingCursor(db.connection))  # Django's wrapper: logging, errors


class PreparedSelect:
    """``model`` rows (alias ``m``) matching ``where``, optionally with one forward foreign key's
    row (alias ``r``) joined and cached, as ``select_related(related)`` would.

    ``where``, ``order_by``, ``distinct_on`` and ``limit`` are SQL over those aliases, with ``%s``
    placeholders; ``defer`` names fields left out (loaded lazily if ever read, as with ``QuerySet.defer``).
    """

    def __init__(
        self,
        model: type[Model],
        *,
        where: str,
        related: str | None = None,
        defer: Iterable[str] = (),
        order_by: str = "",
        distinct_on: str = "",
        limit: int | None = None,
    ) -> None:
        self.model = model
        self.related = related
        self.defer = frozenset(defer)
        self.where, self.order_by, self.distinct_on, self.limit = where, order_by, distinct_on, limit

    @cached_property
    def _plan(self):
        """SQL, the main model's loaded fields and the related model's (built on first use: models
        are not ready when this module's users are imported)."""
        fields = [f for f in self.model._meta.concrete_fields if f.name not in self.defer]
        columns = [_column(MAIN, f) for f in fields]
        tables = f'{_quoted(self.model._meta.db_table)} AS "{MAIN}"'
        related_fields, link = [], None
        if self.related:
            link = self.model._meta.get_field(self.related)
            if link.null or not link.many_to_one:
                raise ValueError(f"{self.related} must be a non-null foreign key (an inner join)")
            target = link.related_model
            related_fields = list(target._meta.concrete_fields)
            columns += [_column(RELATED, f) for f in related_fields]
            tables += (
                f' JOIN {_quoted(target._meta.db_table)} AS "{RELATED}"'
                f' ON "{RELATED}".{_quoted(link.target_field.column)} = "{MAIN}".{_quoted(link.column)}'
            )
        distinct = f"DISTINCT ON ({self.distinct_on}) " if self.distinct_on else ""
        sql = f"SELECT {distinct}{', '.join(columns)} FROM {tables} WHERE {self.where}"
        if self.order_by:
            sql += f" ORDER BY {self.order_by}"
        if self.limit is not None:
            sql += f" LIMIT {int(self.limit)}"
        related_loader = _Loader(link.related_model, related_fields) if link else None
        return sql, _Loader(self.model, fields), related_loader, link

    def fetch_values(self, params: Sequence = ()) -> list[list]:
        """The loaded fields' values of each matching row, converted as for instances, in the
        model's field order (no instances built: for rows read only to be looked up)."""
        sql, main, _, _ = self._plan
        db = connections[DEFAULT_DB_ALIAS]
        with planned_once_cursor() as cursor:
            cursor.execute(sql, list(params))
            rows = cursor.fetchall()
        return [main.values(row[: len(main.fields)], db) for row in rows]

    def fetch(self, params: Sequence = ()) -> list[Model]:
        sql, main, related, link = self._plan
        db = connections[DEFAULT_DB_ALIAS]  # once: each lookup through the proxy costs a context-local read
        with planned_once_cursor() as cursor:
            cursor.execute(sql, list(params))
            rows = cursor.fetchall()
        width = len(main.fields)
        instances = []
        for row in rows:
            instance = main.instance(row[:width], db)
            if related is not None:
                link.set_cached_value(instance, related.instance(row[width:], db))
            instances.append(instance)
        return instances


class _Loader:
    """One model's instances from its columns, each value through the ORM's converters for it."""

    def __init__(self, model: type[Model], fields: list) -> None:
        self.model, self.fields = model, fields
        self.attnames = [f.attname for f in fields]
        self.converters = []
        for position, field in enumerate(fields):
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if found:
                self.converters.append((position, found, column))

    def values(self, row: Sequence, db) -> list:
        values = list(row)
        for position, converters, column in self.converters:
            for converter in converters:
                values[position] = converter(values[position], column, db)
        return values

    def instance(self, row: Sequence, db) -> Model:
        return self.model.from_db(db.alias, self.attnames, self.values(row, db))


def _column(alias: str, field) -> str:
    return f'"{alias}".{_quoted(field.column)}'


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)
