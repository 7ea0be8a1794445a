"""`manage.py check --deploy`: the address e-mailed links point at must be one this site serves."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core import checks
from django.http.request import validate_host


@checks.register(checks.Tags.security, deploy=True)
def public_url_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Reset links go to KNOWLEDGE_PUBLIC_URL: left at its default behind TLS they would lead
    nowhere (or, over plain http, send the token in the clear)."""
    public = urlsplit(settings.KNOWLEDGE_PUBLIC_URL)
    found = []
    if settings.HTTPS and public.scheme != "https":
        found.append(_warning(f"is {settings.KNOWLEDGE_PUBLIC_URL} while HTTPS is on", "accounts.W001"))
    host = f"[{public.hostname}]" if ":" in public.hostname else public.hostname  # as Host headers write IPv6
    if not validate_host(host, settings.ALLOWED_HOSTS):
        found.append(_warning(f"names {host}, which ALLOWED_HOSTS does not serve", "accounts.W002"))
    return found


def _warning(problem: str, check_id: str) -> checks.Warning:
    return checks.Warning(
        f"KNOWLEDGE_PUBLIC_URL {problem}: password-reset links point there.",
        hint="Set KNOWLEDGE_PUBLIC_URL to the address users reach this site at, e.g. https://kb.example.com.",
        id=check_id,
    )
