"""The admin's warning while an operator account still has the default password."""

from django import template

from accounts.policy import users_with_default_password

register = template.Library()


@register.simple_tag
def default_password_usernames() -> list[str]:
    """Queried only where the admin's base template asks (admin pages), never on the site's pages."""
    return list(users_with_default_password().values_list("username", flat=True))
