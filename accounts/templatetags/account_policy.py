"""The admin's warning while an operator account still has the default password; whether sign-up is open."""

from django import template
from django.conf import settings

from accounts.policy import users_with_default_password

register = template.Library()


@register.simple_tag
def default_password_usernames() -> list[str]:
    """Queried only where the admin's base template asks (admin pages), never on the site's pages."""
    return list(users_with_default_password().values_list("username", flat=True))


@register.simple_tag
def local_login_enabled() -> bool:
    """Whether to offer sign-up (closed while local log-in is off)."""
    return settings.LOCAL_LOGIN_ENABLED
