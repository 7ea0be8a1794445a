"""Template tags of the operator admin."""

from django import template

from knowledge.services.dashboard import operator_dashboard as _operator_dashboard

register = template.Library()


@register.simple_tag
def operator_dashboard():
    """The dashboard's counts (templates/admin/index.html)."""
    return _operator_dashboard()
