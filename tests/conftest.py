from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


def throttle_rates(settings, **rates: str) -> None:
    """Set some of the per-user rates (scope="N/period") for one test, the others as configured."""
    import copy

    from config.api_settings import REST_FRAMEWORK

    rest = copy.deepcopy(REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], **rates}
    settings.REST_FRAMEWORK = rest


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}")
    return CORPUS


@pytest.fixture
def make_user(db, django_user_model):
    def make(username: str, **extra):
        return django_user_model.objects.create_user(username=username, password="pw-" + username, **extra)

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def charlie(make_user):
    return make_user("charlie")


def test_database_url() -> str:
    """A DATABASE_URL for the test database, for child processes (workers, servers)."""
    from urllib.parse import quote

    from django.db import connection

    db = connection.settings_dict
    host = db["HOST"] or db["OPTIONS"].get("host", "")
    credentials = quote(db["USER"] or "") + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    if host.startswith("/"):
        return f"postgresql://{credentials}@/{db['NAME']}?host={quote(host)}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgresql://{credentials}@{host}{port}/{db['NAME']}"


test_database_url.__test__ = False  # a helper, not a test
