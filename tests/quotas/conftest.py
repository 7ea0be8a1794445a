"""Quota test helpers: small real documents (Django release notes from the shared corpus) and overrides."""

from __future__ import annotations

import pytest

from knowledge.models import Quota
from tests.conftest import CORPUS

RELEASES = sorted((CORPUS / "django-docs" / "releases").glob("1.11.*.txt"))[:6]


def note(index: int) -> tuple[str, bytes]:
    """The index-th small release note: its file name and bytes."""
    path = RELEASES[index]
    return path.name, path.read_bytes()


def limit(user=None, *, group=None, **limits) -> Quota:
    """An operator's override for ``user`` or ``group``."""
    return Quota.objects.create(user=user, group=group, **limits)


@pytest.fixture
def no_default_quotas(settings):
    """No limit from the environment: each test sets the ones it checks."""
    for name in ("DOCUMENTS", "BYTES", "CHUNKS", "QUESTIONS_PER_DAY", "LLM_TOKENS_PER_MONTH"):
        setattr(settings, f"KNOWLEDGE_QUOTA_{name}", None)
