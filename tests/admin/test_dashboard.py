"""The admin's landing page: documents processing or failed, questions today, unanswered, rated answers."""

from __future__ import annotations

import datetime
import re

import pytest
from django.utils import timezone

from knowledge.models import ChatTurn, Document
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.api.test_feedback import answered
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db


def figure(page: str, words: str) -> int:
    """The number shown before ``words`` (in the same line of text) on the dashboard."""
    match = re.search(r"<strong>(\d+)</strong>[^<]*" + re.escape(words), page)
    assert match, f"no figure for {words!r}"
    return int(match.group(1))


@pytest.mark.django_db(transaction=True)  # uploads are processed when their transaction commits
def test_the_landing_page_counts_what_needs_attention_and_links_to_it(admin_client, alice, bob):
    collection = collection_create(name="Papers", owner=alice)
    broken = (CORPUS / "pdf" / "pasa.pdf").read_bytes()[:4000]
    document_upload(collection=collection, upload=DocumentUpload(filename="broken.pdf", data=broken))
    notes = b"# Notes\n\nGravity hills fool the eye."
    document_upload(collection=collection, upload=DocumentUpload(filename="notes.md", data=notes))
    answered(alice, feedback_rating="up")
    answered(bob, "What is flag day?", feedback_rating="down")
    answered(alice, "Refund policy for pets?", mode="no_results", answer="")
    old = answered(bob, "An old unanswered question", mode="no_results", answer="")
    ChatTurn.objects.filter(pk=old.pk).update(created_at=timezone.now() - datetime.timedelta(days=3))

    page = admin_client.get("/admin/").content.decode()
    assert "What needs attention" in page
    assert figure(page, "failed") == 1 and figure(page, "processing") == 0
    assert figure(page, "today") == 3
    assert figure(page, "unanswered today") == 1 and "(2 in 7 days)" in page
    assert figure(page, "rated helpful") == 1 and figure(page, "not helpful") == 1
    failed = Document.objects.get(filename="broken.pdf")
    assert "broken.pdf" in page and failed.error[:40] in page  # the newest failures, with their reasons

    # Each figure links to the list it counts.
    for link in re.findall(r'<li[^>]*><a href="([^"]+)"><strong>', page):
        response = admin_client.get(link.replace("&amp;", "&"))
        assert response.status_code == 200, link  # an unknown filter would redirect with ?e=1
    unanswered = admin_client.get(
        f"/admin/knowledge/chatturn/?mode__exact=no_results&created_at__gte={timezone.localdate():%Y-%m-%d}"
    )
    assert unanswered.context["cl"].result_count == 1


def test_the_dashboard_is_for_operators_only(client, alice):
    client.force_login(alice)
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response.url
