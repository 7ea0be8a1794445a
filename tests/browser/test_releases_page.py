"""Releases in a real headless Chromium: Alice promotes the release the gate held, after confirming,
then rolls back to the one that served before."""

from __future__ import annotations

import pytest

from knowledge.models import ChunkProfile, Release
from knowledge.services.collections import collection_reindex
from tests.browser import test_pages_ux
from tests.browser.test_pages_ux import SIZES, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
chromium = test_pages_ux.chromium  # one Chromium for the module
hills = test_pages_ux.hills


def test_an_owner_promotes_a_held_release_and_rolls_back(chromium, live_server, hills):
    first = Release.objects.get(collection=hills, state="serving")
    small = ChunkProfile.objects.create(name="fixed 100", strategy="fixed", chunk_size=100, chunk_overlap=0)
    collection_reindex(collection=hills, chunk_profile=small)  # no question set: the gate holds it
    held = Release.objects.get(collection=hills, state="held")

    page = signed_in(chromium, live_server.url, "alice", SIZES["desktop"])
    page.goto(f"{live_server.url}/collections/{hills.pk}/")
    row = page.locator(f"#release-list tr[data-release='{held.pk}']")
    assert row.locator("[data-role=state]").inner_text() == "Held"
    assert "nothing to measure" in row.locator("[data-role=gate]").inner_text()
    assert page.locator("#rollback-form").count() == 0

    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    row.locator("button", has_text="Promote").click()
    page.wait_for_selector(f"#release-list tr[data-release='{held.pk}'][data-state='serving']")
    assert dialogs[-1].startswith(f"Serve release #{held.pk} (fixed 100) now?")
    assert f"Release {held.pk} serves now" in page.inner_text("main")

    page.click("#rollback-form button")
    page.wait_for_selector(f"#release-list tr[data-release='{first.pk}'][data-state='serving']")
    assert dialogs[-1].startswith("Serve the release that served before")
    assert f"Release {first.pk} serves again (release {held.pk} retired)." in page.inner_text("main")
    hills.refresh_from_db()
    assert hills.chunk_profile_id == first.chunk_profile_id
