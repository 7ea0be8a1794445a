"""WCAG 2.2 AA on every page, light and dark: axe-core (bundled by axe-playwright-python) in Chromium.

Each page is loaded in a fresh context per colour scheme and checked against the rule sets the
product promises (wcag2a, wcag2aa, wcag22aa, plus the 2.1 additions wcag21a/wcag21aa that 2.2
includes). A failure lists every violation with its nodes, so the message says what to fix.
"""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import Group

from knowledge.models import Collection, EvalRun, KnowledgeSetting
from knowledge.parameter_values import global_settings_ensure
from knowledge.services.collections import collection_create
from knowledge.services.teams import collection_share_set
from tests.asking import chat_ask
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import DESKTOP, upload
from tests.conftest import CORPUS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SCHEMES = ("light", "dark")
chromium = test_pages_ux.chromium  # one Chromium for the module


@pytest.fixture
def site(alice, bob, django_user_model):
    """Alice's listed collection with a Markdown file and a PDF, shared with one of her two teams, an
    answered session; Bob's public collection; an operator account."""
    collection = collection_create(name="Hills", owner=alice, description="Odd places")
    markdown = upload(collection, CORPUS / "text" / "gravity_hill.md")
    pdf = upload(collection, CORPUS / "pdf" / "pasa.pdf")
    Collection.objects.filter(pk=collection.pk).update(listed=True, tags=["geology"])
    collection_create(name="Bob's public notes", owner=bob, visibility="public")
    for name in ("Geology", "Field trips"):  # the Teams card: one team shared with, a form to share more
        alice.groups.add(Group.objects.create(name=name))
    collection_share_set(collection=collection, user=alice, group="Geology", can_write=True)
    turn = chat_ask(user=alice, question="Why do cars seem to roll uphill?", collection_ids=[collection.pk])
    # An unanswered question, so the usage insight's content gaps have a row.
    chat_ask(user=alice, question="What is the parental leave policy?", collection_ids=[collection.pk])
    django_user_model.objects.create_superuser("operator", "op@example.com", "pw-operator")
    return {"collection": collection, "markdown": markdown, "pdf": pdf, "session": turn.session_id}


def user_pages(site) -> dict[str, str]:
    return {
        "chat": "/chat/",
        "chat session": f"/chat/?session={site['session']}",
        "collections": "/collections/",
        "collection": f"/collections/{site['collection'].pk}/",
        "document reader": f"/documents/{site['markdown'].pk}/view/",
        "pdf reader": f"/documents/{site['pdf'].pk}/view/",
        "marketplace": "/marketplace/",
        "profiles": "/profiles/",
        "tokens": "/accounts/tokens/",
        "two-factor authentication": "/accounts/2fa/",
        "security keys": "/accounts/2fa/webauthn/",
    }


def admin_pages() -> dict[str, str]:
    global_settings_ensure()
    setting = KnowledgeSetting.objects.get(key="semanticWeight")
    pages = {
        "admin dashboard": "/admin/",
        "admin settings": "/admin/knowledge/knowledgesetting/",
        "admin collections": "/admin/knowledge/collection/",
        "admin documents": "/admin/knowledge/document/",
        "admin evaluation runs": f"/admin/knowledge/{EvalRun._meta.model_name}/",
        "admin users": "/admin/auth/user/",
        "admin usage insight": "/admin/insight/",
    }
    pages["admin setting"] = f"/admin/knowledge/knowledgesetting/{setting.pk}/change/"
    return pages


# Best-practice rules the review found broken, checked beside the WCAG rules: every table header says
# what its column holds, and every page has one h1.
REVIEW_RULES = ["empty-table-header", "page-has-heading-one"]


def violations(page) -> list[str]:
    """Each violation as one line: rule, impact, and the first nodes' selectors and summaries."""
    found = []
    for only in ({"type": "tag", "values": WCAG_TAGS}, {"type": "rule", "values": REVIEW_RULES}):
        response = Axe().run(page, options={"runOnly": only}).response
        assert response["passes"] or response["violations"], f"axe checked nothing on {page.url}: {only}"
        found += response["violations"]
    lines = []
    for violation in found:
        nodes = "; ".join(
            f"{node['target']}: {node.get('failureSummary', '').splitlines()[-1].strip()}"
            for node in violation["nodes"][:3]
        )
        lines.append(f"{violation['id']} ({violation['impact']}, {len(violation['nodes'])} nodes): {nodes}")
    return lines


def check_pages(chromium, base: str, username: str | None, pages: dict[str, str]) -> dict[str, list[str]]:
    found = {}
    for scheme in SCHEMES:
        context = chromium.new_context(viewport=DESKTOP, color_scheme=scheme)
        page = context.new_page()
        try:
            if username:
                page.goto(f"{base}/accounts/login/")
                page.fill("input[name=username]", username)
                page.fill("input[name=password]", f"pw-{username}")
                page.click("button[type=submit]")
                page.wait_for_load_state()
            for name, path in pages.items():
                page.goto(f"{base}{path}")
                page.wait_for_load_state("networkidle")
                assert page.url == f"{base}{path}", f"{name}: {page.url}"  # not the log-in page instead
                # What is folded away is checked too: open every section.
                page.eval_on_selector_all("details", "sections => sections.forEach(s => { s.open = true; })")
                problems = violations(page)
                if problems:
                    found[f"{name} ({scheme}) {path}"] = problems
        finally:
            context.close()
    return found


def report(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{page}:\n  " + "\n  ".join(lines) for page, lines in found.items())


def test_signed_in_pages_have_no_wcag_violations(chromium, live_server, site):
    found = check_pages(chromium, live_server.url, "alice", user_pages(site))
    if found:
        pytest.fail(report(found), pytrace=False)


def test_public_pages_have_no_wcag_violations(chromium, live_server, site):
    pages = {
        "log-in": "/accounts/login/",
        "sign-up": "/accounts/signup/",
        "passkey sign-up": "/accounts/signup/passkey/",
        "password reset": "/accounts/password/reset/",
    }
    found = check_pages(chromium, live_server.url, None, pages)
    if found:
        pytest.fail(report(found), pytrace=False)


def test_admin_pages_have_no_wcag_violations(chromium, live_server, site):
    found = check_pages(chromium, live_server.url, "operator", admin_pages())
    if found:
        pytest.fail(report(found), pytrace=False)


def test_the_checker_finds_a_violation(chromium, live_server):
    """The check itself can fail: an image without alternative text is reported."""
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.set_content("<html lang=en><title>t</title><main><h1>x</h1><img src='data:,'></main></html>")
        assert any(re.match(r"image-alt ", line) for line in violations(page))
    finally:
        context.close()
