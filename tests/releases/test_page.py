"""The collection page's Releases card: its managers see the gate's verdict and decide; nobody else does."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge.models import Release
from knowledge.services.collections import collection_update

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_sees_the_held_release_and_promotes_then_rolls_back(
    alice, bob, charlie, handbook, hundred_characters
):
    owner = signed_in(alice)
    page = f"/collections/{handbook.pk}/"
    actions = f"/collections/{handbook.pk}/releases/"
    first = Release.objects.get(collection=handbook, state="serving")
    started = owner.post(
        f"/collections/{handbook.pk}/settings/",
        {"action": "reindex", "chunk_profile": hundred_characters.pk},
    )
    assert started.status_code == 302
    held = Release.objects.get(collection=handbook, state="held")

    html = owner.get(page).content.decode()
    card = html[html.index('id="releases"') : html.index('id="collection-settings"')]
    assert f'data-release="{held.pk}" data-state="held"' in card
    assert f'data-release="{first.pk}" data-state="serving"' in card
    assert "<strong>held</strong> on" in card and "recall@5" in card and "MRR" in card
    assert f"{held.gate['worse']} worse" in card and held.reason in card
    worse = [row for row in held.gate["per_question"] if row["change"] == "worse"]
    assert f"Details: {len(worse)} question" in card
    assert worse[0]["question"].replace("'", "&#x27;").replace('"', "&quot;") in card
    assert card.count('value="promote"') == 1 and card.count('value="discard"') == 1
    assert 'data-confirm="Serve release #' in card and "csrfmiddlewaretoken" in card
    assert 'id="rollback-form"' not in card  # nothing retired yet

    # Bob, an outsider, finds no such collection, on the page and behind its buttons.
    assert signed_in(bob).get(page).status_code == 404
    refused = signed_in(bob).post(actions, {"action": "promote", "release": held.pk})
    assert refused.status_code == 404 and Release.objects.get(pk=held.pk).state == "held"
    # Charlie reads the collection once it is public, and sees no releases and no buttons.
    collection_update(collection=handbook, visibility="public")
    reader_page = signed_in(charlie).get(page).content.decode()
    assert 'id="releases"' not in reader_page and 'value="promote"' not in reader_page
    assert signed_in(charlie).post(actions, {"action": "rollback"}).status_code == 403

    promoted = owner.post(actions, {"action": "promote", "release": held.pk}, follow=True)
    assert f"Release {held.pk} serves now" in promoted.content.decode()
    assert 'id="rollback-form"' in promoted.content.decode()
    rolled_back = owner.post(actions, {"action": "rollback"}, follow=True).content.decode()
    assert f"Release {first.pk} serves again (release {held.pk} retired)." in rolled_back
    handbook.refresh_from_db()
    assert handbook.chunk_profile_id == first.chunk_profile_id

    serving_again = owner.post(actions, {"action": "promote", "release": first.pk})
    assert serving_again.status_code == 400
    assert f"release {first.pk} is serving; only a candidate or held one is promoted" in (
        serving_again.content.decode()
    )
