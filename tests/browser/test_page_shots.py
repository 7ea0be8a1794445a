"""No page scrolls sideways at 360 px, and screenshots of the main pages at desktop and phone size.

Screenshots go to tests/artifacts/<phase>/ (UI_ARTIFACTS_PHASE, default "after"; the same test run
on an older checkout with UI_ARTIFACTS_PHASE=before gives the pictures to compare with).
"""

from __future__ import annotations

import os
import re

import pytest

from knowledge.models import Collection, Document
from knowledge.services.collections import collection_create
from tests.asking import chat_ask
from tests.browser.test_pages_ux import DESKTOP, PHONE, chromium, signed_in, upload  # noqa: F401
from tests.conftest import CORPUS, REPO_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
pytest_plugins = ["tests.synthesis.openai_server"]

PHASE = os.environ.get("UI_ARTIFACTS_PHASE", "after")
ARTIFACTS = REPO_ROOT / "tests" / "artifacts" / PHASE
NARROW = {"width": 360, "height": 740}


@pytest.fixture
def library(alice, bob):
    """Alice's collection with a ready and a failed document, listed, one answered session."""
    collection = collection_create(
        name="Hills and sieges", owner=alice, description="Odd places and old wars"
    )
    ready = upload(collection, CORPUS / "text" / "gravity_hill.md")
    upload(collection, CORPUS / "pdf" / "pasa.pdf", data=(CORPUS / "pdf" / "pasa.pdf").read_bytes()[:4000])
    Collection.objects.filter(pk=collection.pk).update(listed=True, tags=["geology"])
    collection_create(
        name="Bob's very long collection name that goes on and on", owner=bob, visibility="public"
    )
    turn = chat_ask(
        user=alice,
        question="Why do cars seem to roll uphill on a gravity hill?",
        collection_ids=[collection.pk],
    )
    return {"collection": collection, "document": ready, "session": turn.session_id}


def pages(library) -> dict[str, str]:
    return {
        "collections": "/collections/",
        "collection": f"/collections/{library['collection'].pk}/",
        "chat": "/chat/",
        "chat-session": f"/chat/?session={library['session']}",
        "profiles": "/profiles/",
        "marketplace": "/marketplace/",
        "tokens": "/accounts/tokens/",
        "password": "/accounts/password/change/",
        "document": f"/documents/{library['document'].pk}/view/",
    }


def test_no_page_scrolls_sideways_at_360_px(chromium, live_server, library, no_llm):  # noqa: F811
    page = signed_in(chromium, live_server.url, "alice", NARROW)
    wide = {}
    for name, path in pages(library).items():
        page.goto(live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > NARROW["width"]:
            wide[name] = width
    page.context.clear_cookies()
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        page.goto(live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > NARROW["width"]:
            wide[path] = width
    page.context.close()
    assert wide == {}, f"pages wider than {NARROW['width']} px: {wide}"


def test_screenshots_of_chat_collection_marketplace_and_profiles(chromium, live_server, library, no_llm):  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shots = {
        "chat": f"/chat/?session={library['session']}",
        "collection": f"/collections/{library['collection'].pk}/",
        "marketplace": "/marketplace/",
        "profiles": "/profiles/",
    }
    for size_name, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page = signed_in(chromium, live_server.url, "alice", size)
        for name, path in shots.items():
            page.goto(live_server.url + path)
            page.wait_for_load_state("networkidle")
            target = ARTIFACTS / f"{name}-{size_name}.png"
            page.screenshot(path=str(target), full_page=True)
            assert target.stat().st_size > 5_000
        page.context.close()
    assert Document.objects.filter(status=Document.Status.FAILED).count() == 1


def test_dark_mode_follows_the_system_setting(chromium, live_server, library, no_llm):  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for scheme, dark in (("dark", True), ("light", False)):
        page = signed_in(chromium, live_server.url, "alice", DESKTOP, color_scheme=scheme)
        page.goto(f"{live_server.url}/chat/?session={library['session']}")
        for selector in ("body", ".card"):
            rgb = page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")
            red, green, blue = (int(v) for v in re.findall(r"\d+", rgb)[:3])
            luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
            assert (luminance < 80) == dark, f"{scheme}: {selector} is {rgb}"
        if dark:
            page.screenshot(path=str(ARTIFACTS / "chat-desktop-dark.png"), full_page=True)
        page.context.close()
