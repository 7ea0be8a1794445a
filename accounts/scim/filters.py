"""SCIM filters (RFC 7644 section 3.4.2.2) to ORM queries, by scim2-filter-parser's Django
transpiler, with an attribute map per resource.

The library drops a comparison whose attribute is not in the map, which would widen
``userName eq "a" and nickName eq "b"`` to every user with that name (or an unknown filter to
everyone): here an unmapped attribute is a 400 ``invalidFilter`` instead. The one attribute
accepted and not compared is an e-mail's ``type`` (``emails[type eq "work"].value eq ...``, as
Entra ID sends it): an account has one address, whatever its type.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q
from scim2_filter_parser.lexer import SCIMLexer
from scim2_filter_parser.parser import SCIMParser, SCIMParserError
from scim2_filter_parser.transpilers.django_q_object import Transpiler

from accounts.scim.errors import ScimError

MAX_FILTER_LENGTH = 1000
_IGNORED = "-"

USER_ATTRIBUTES = {
    ("id", None, None): "pk",
    ("userName", None, None): "username",
    ("externalId", None, None): "scim_account__external_id",
    ("emails", None, None): "email",
    ("emails", "value", None): "email",
    ("emails", "type", None): _IGNORED,
    ("name", "givenName", None): "first_name",
    ("name", "familyName", None): "last_name",
    ("active", None, None): "is_active",
}
GROUP_ATTRIBUTES = {
    ("id", None, None): "pk",
    ("displayName", None, None): "name",
    ("externalId", None, None): "scim_group__external_id",
    ("members", None, None): "scim_members__user__pk",  # accounts.scim.groups.scim_groups
    ("members", "value", None): "scim_members__user__pk",
}


class _StrictTranspiler(Transpiler):
    def visit_AttrPath(self, node):
        found = super().visit_AttrPath(node)
        if found is None:
            raise ScimError(400, f"filtering by {_path_text(node)} is not supported", "invalidFilter")
        return found

    def visit_AttrExpr(self, node):
        if (
            not isinstance(node.attr_path.attr_name, str | type(None))
            or self.visit(node.attr_path) != _IGNORED
        ):
            return _numeric(super().visit_AttrExpr(node))
        return None


def _path_text(node) -> str:
    sub = f".{node.sub_attr.value}" if node.sub_attr else ""
    return f'"{node.attr_name}{sub}"'


def _numeric(query):
    """Ids are numbers: ``id eq "12"`` compares as one (the library would compare text without case);
    an id that is no number matches nothing, and is refused in an ordering (``id gt "x"``)."""
    if not isinstance(query, Q) or len(query.children) != 1 or not isinstance(query.children[0], tuple):
        return query
    key, value = query.children[0]
    field, _, op = key.rpartition("__")
    if not field.endswith("pk") or op == "isnull":
        return query
    text = str(value)
    number = int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None
    if number is None and op not in ("iexact", "exact"):
        raise ScimError(400, f"an id is a number, not {text!r}", "invalidFilter")
    op = (
        "exact"
        if op in ("iexact", "exact", "icontains", "istartswith", "iendswith") and number is not None
        else op
    )
    lookup = f"{field}__{op}" if number is not None else field
    return Q(**{lookup: number if number is not None else -1}, _negated=query.negated)


def filtered(queryset, text: str | None, attributes: dict):
    """``queryset`` narrowed by a filter parameter; ScimError 400 for a filter that cannot be read or
    compares a value of the wrong kind (``active gt 3``)."""
    query = filter_query(text, attributes)
    try:
        return queryset.filter(query)
    except (ValueError, TypeError, ValidationError) as exc:
        raise ScimError(
            400, f"the filter compares a value of the wrong kind: {text}", "invalidFilter"
        ) from exc


def filter_query(text: str | None, attributes: dict) -> Q:
    """The ``Q`` of a filter parameter; everything for none; ScimError 400 for a bad one."""
    if not text:
        return Q()
    if len(text) > MAX_FILTER_LENGTH:
        raise ScimError(400, "the filter is too long", "invalidFilter")
    try:
        tree = SCIMParser().parse(SCIMLexer().tokenize(text))
        query = _StrictTranspiler(attributes).transpile(tree)
    except ScimError:
        raise
    except (SCIMParserError, ValueError, TypeError, AttributeError, NotImplementedError) as exc:
        raise ScimError(400, f"the filter cannot be read: {text}", "invalidFilter") from exc
    return query if query is not None else Q()
