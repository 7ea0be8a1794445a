"""Alice / Bob / Charlie over every page and endpoint: what a user may not read is 404, everywhere.

Alice owns a private, an unlisted, a public and (via staff) sees an admin-owned
collection, each with a document; she has a chat session, a profile and a
token. Charlie has nothing of hers: every path to her private things answers
404 (never 403, never data), lists never show them, and searches never return
their chunks even when they are the best match. Her unlisted collection is the
same to him until he opens its share link: walking the (sequential) ids finds
nothing; with the link he reads it; when she rotates the link he is out again.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.api_tokens import token_create
from knowledge.models import ChatSession, Chunk, Document, Profile, ProfileCollection
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.asking import chat_ask

pytest_plugins = ["tests.synthesis.openai_server"]
pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "Why does a car seem to roll uphill on a gravity hill?"


@pytest.fixture
def alices(alice, corpus, no_llm):
    path = corpus / "text" / "gravity_hill.md"
    made = {}
    for visibility in ("private", "unlisted", "public"):
        made[visibility] = collection_create(name=f"alice {visibility}", owner=alice, visibility=visibility)
    made["admin"] = collection_create(name="handbook", owner=None)
    docs = {}
    for key, collection in made.items():
        result = document_upload(
            collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
        )
        docs[key] = Document.objects.get(pk=result.document.pk)
    profile = Profile.objects.create(owner=alice, name="alice profile", tag="ap")
    ProfileCollection.objects.create(profile=profile, collection=made["private"])
    turn = chat_ask(user=alice, question=QUESTION, collection_ids=[made["private"].pk])
    token, _ = token_create(user=alice, name="alice token")
    return {"c": made, "d": docs, "profile": profile, "session": turn.session, "token": token}


@pytest.fixture
def charlie_api(charlie):
    _, secret = token_create(user=charlie, name="charlie")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def charlie_web(charlie):
    client = Client()
    client.force_login(charlie)
    return client


def _private_api_calls(a, key="private"):
    c, d = a["c"][key].pk, a["d"][key].pk
    return [
        ("get", f"/api/v1/collections/{c}/", None),
        ("patch", f"/api/v1/collections/{c}/", {"description": "mine now"}),
        ("delete", f"/api/v1/collections/{c}/", None),
        ("get", f"/api/v1/collections/{c}/documents/", None),
        ("post", f"/api/v1/collections/{c}/subscribe/", None),
        ("get", f"/api/v1/collections/{c}/subscriptions/", None),
        ("get", f"/api/v1/documents/{d}/", None),
        ("delete", f"/api/v1/documents/{d}/", None),
        ("post", f"/api/v1/documents/{d}/retry/", None),
        ("post", f"/api/v1/documents/{d}/reindex/", None),
        ("post", "/api/v1/retrieve/", {"question": QUESTION, "collections": [c]}),
        ("post", "/api/v1/query/", {"question": QUESTION, "collections": [c]}),
        ("post", "/api/v1/retrieve/", {"question": QUESTION, "profile": a["profile"].pk}),
        ("get", f"/api/v1/profiles/{a['profile'].pk}/", None),
        ("delete", f"/api/v1/profiles/{a['profile'].pk}/", None),
        ("get", f"/api/v1/sessions/{a['session'].pk}/", None),
        ("post", "/api/v1/query/", {"question": QUESTION, "session": a["session"].pk}),
        ("post", f"/api/v1/sessions/{a['session'].pk}/turns/0/feedback/", {"rating": "down"}),
        ("patch", f"/api/v1/sessions/{a['session'].pk}/", {"title": "mine now"}),
        ("delete", f"/api/v1/sessions/{a['session'].pk}/", None),
        ("delete", f"/api/v1/tokens/{a['token'].pk}/", None),
    ]


def _private_pages(a, key="private"):
    c, d = a["c"][key].pk, a["d"][key].pk
    return [
        ("get", f"/collections/{c}/", None),
        ("get", f"/collections/{c}/documents.json", None),
        ("post", f"/collections/{c}/upload/", {}),
        ("post", f"/collections/{c}/listing/", {"listed": "1"}),
        ("post", f"/documents/{d}/retry/", None),
        ("post", f"/documents/{d}/delete/", None),
        ("get", f"/documents/{d}/view/", None),
        ("get", f"/documents/{d}/file/", None),
        ("get", f"/chat/?session={a['session'].pk}", None),
        ("get", f"/chat/?collection={c}", None),
        ("post", "/chat/ask/", {"question": QUESTION, "session": a["session"].pk}),
        ("post", "/marketplace/" + str(c) + "/subscribe/", None),
        ("post", "/chat/ask/", {"question": QUESTION, "collections": [c]}),
        ("post", "/profiles/", {"name": "mine", "tag": "mine", "collections": [c]}),
    ]


def test_charlie_gets_404_for_every_api_path_to_alices_private_things(alices, charlie_api):
    for method, url, body in _private_api_calls(alices):
        response = getattr(charlie_api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code, response.content[:300])
    # Nothing was changed through any of those calls.
    alices["c"]["private"].refresh_from_db()
    assert alices["c"]["private"].description == ""
    assert Document.objects.filter(pk=alices["d"]["private"].pk, status="ready").exists()
    session = ChatSession.objects.get(pk=alices["session"].pk)  # not renamed, deleted or rated
    assert session.title != "mine now" and session.turns.get(index=0).feedback_rating == ""


def test_charlie_gets_404_for_every_page_to_alices_private_things(alices, charlie_web):
    for method, url, body in _private_pages(alices):
        response = getattr(charlie_web, method)(url, body or {})
        assert response.status_code == 404, (method, url, response.status_code)
    assert not Profile.objects.filter(owner__username="charlie").exists()


def test_lists_show_charlie_only_what_he_may_see(alices, charlie_api, charlie_web):
    names = {c["name"] for c in charlie_api.get("/api/v1/collections/").json()["results"]}
    assert names == {"alice public", "handbook"}  # unlisted is reachable by id only
    page = charlie_web.get("/collections/").content.decode()
    assert "alice public" in page and "handbook" in page
    assert "alice private" not in page and "alice unlisted" not in page
    assert charlie_api.get("/api/v1/sessions/").json()["count"] == 0
    assert charlie_api.get("/api/v1/profiles/").json()["count"] == 0
    assert "alice private" not in charlie_web.get("/marketplace/").content.decode()
    assert "alice private" not in charlie_web.get("/chat/").content.decode()


def test_admin_owned_and_public_are_readable_by_id(alices, charlie_api, charlie_web):
    for key in ("public", "admin"):
        cid, did = alices["c"][key].pk, alices["d"][key].pk
        assert charlie_api.get(f"/api/v1/collections/{cid}/").status_code == 200, key
        assert charlie_api.get(f"/api/v1/documents/{did}/").status_code == 200, key
        assert charlie_web.get(f"/collections/{cid}/").status_code == 200, key
        assert charlie_web.get(f"/documents/{did}/view/").status_code == 200, key
        # Readable is not writable: owners (or staff, for admin-owned) only.
        assert charlie_api.delete(f"/api/v1/documents/{did}/").status_code == 403, key


@pytest.mark.security
def test_charlie_walking_ids_finds_nothing_of_alices_unlisted_collection(alices, charlie_api, charlie_web):
    for method, url, body in _private_api_calls(alices, "unlisted"):
        response = getattr(charlie_api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code, response.content[:300])
    for method, url, body in _private_pages(alices, "unlisted"):
        response = getattr(charlie_web, method)(url, body or {})
        assert response.status_code == 404, (method, url, response.status_code)
    # Walking every id around hers: only what he may read answers, hers never does.
    unlisted = alices["c"]["unlisted"]
    readable = {alices["c"]["public"].pk, alices["c"]["admin"].pk}
    ids = [c.pk for c in alices["c"].values()]
    for cid in range(max(1, min(ids) - 2), max(ids) + 3):
        expected = 200 if cid in readable else 404
        assert charlie_api.get(f"/api/v1/collections/{cid}/").status_code == expected, cid
        assert charlie_web.get(f"/collections/{cid}/").status_code == expected, cid
    public = alices["c"]["public"]
    assert charlie_api.get(f"/api/v1/collections/{public.pk}/").json()["share_token"] is None  # owners only
    assert public.share_token not in charlie_web.get(f"/collections/{public.pk}/").content.decode()
    assert unlisted.share_token not in charlie_web.get("/collections/").content.decode()


def _share_token(owner_api, collection_id) -> str:
    body = owner_api.get(f"/api/v1/collections/{collection_id}/").json()
    assert body["share_url"].endswith(f"/collections/link/{body['share_token']}/")
    return body["share_token"]


@pytest.fixture
def alice_api(alices, alice):
    _, secret = token_create(user=alice, name="alice api")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.mark.security
def test_the_share_link_lets_charlie_read_until_alice_rotates_it(
    alices, alice_api, charlie_api, charlie_web, bob
):
    unlisted, document = alices["c"]["unlisted"], alices["d"]["unlisted"]
    token = _share_token(alice_api, unlisted.pk)
    assert len(token) >= 32

    opened = charlie_web.post(f"/collections/link/{token}/")
    assert opened.status_code == 302 and opened["Location"] == f"/collections/{unlisted.pk}/"
    assert charlie_web.get(f"/collections/{unlisted.pk}/").status_code == 200
    assert charlie_web.get(f"/documents/{document.pk}/view/").status_code == 200
    assert charlie_api.get(f"/api/v1/collections/{unlisted.pk}/").json()["share_token"] is None
    assert charlie_api.get(f"/api/v1/documents/{document.pk}/").status_code == 200
    found = charlie_api.post(
        "/api/v1/retrieve/", {"question": QUESTION, "collections": [unlisted.pk]}, format="json"
    )
    assert found.status_code == 200 and {r["document_id"] for r in found.json()["results"]} == {document.pk}
    assert "alice unlisted" in charlie_web.get("/chat/").content.decode()  # in his library now
    # Readable is not writable.
    assert charlie_api.delete(f"/api/v1/documents/{document.pk}/").status_code == 403

    # The API follows the same link: Bob opens it with his token.
    bob_api = APIClient()
    bob_api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=bob, name='b')[1]}")
    assert bob_api.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 404
    by_link = bob_api.post(f"/api/v1/collections/link/{token}/")
    assert by_link.status_code == 200 and by_link.json()["id"] == unlisted.pk
    assert bob_api.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 200

    # Rotating the link drops everyone who held the old one; the new link works again.
    rotated = alice_api.post(f"/api/v1/collections/{unlisted.pk}/share-link/")
    assert rotated.status_code == 200 and rotated.json()["share_token"] not in ("", None, token)
    for client in (charlie_api, bob_api):
        assert client.get(f"/api/v1/collections/{unlisted.pk}/").status_code == 404
        assert client.get(f"/api/v1/documents/{document.pk}/").status_code == 404
        assert client.get(f"/api/v1/collections/link/{token}/").status_code == 404
    assert charlie_web.get(f"/collections/link/{token}/").status_code == 404
    assert charlie_web.post(f"/collections/link/{rotated.json()['share_token']}/").status_code == 302
    assert charlie_web.get(f"/collections/{unlisted.pk}/").status_code == 200
    assert alice_api.post(f"/api/v1/collections/{alices['c']['public'].pk}/share-link/").status_code == 200
    assert charlie_api.post(f"/api/v1/collections/{unlisted.pk}/share-link/").status_code == 403


@pytest.mark.security
def test_a_link_opens_only_an_unlisted_collection(alices, alice_api, charlie_api, charlie_web):
    private = alices["c"]["private"]
    token = _share_token(alice_api, private.pk)  # the owner sees it; it works once she makes it unlisted
    assert charlie_web.get(f"/collections/link/{token}/").status_code == 404
    assert charlie_api.get(f"/api/v1/collections/link/{token}/").status_code == 404
    assert charlie_api.get("/api/v1/collections/link/not-a-real-token-at-all-not-at-all/").status_code == 404
    assert charlie_web.get("/collections/link/%00/").status_code == 400  # NUL: bad input, not a lookup
    assert charlie_api.get(f"/api/v1/collections/{private.pk}/").status_code == 404
    alice_api.patch(f"/api/v1/collections/{private.pk}/", {"visibility": "unlisted"}, format="json")
    assert charlie_api.post(f"/api/v1/collections/link/{token}/").status_code == 200
    # Made private again: the link and what it granted stop working at once.
    alice_api.patch(f"/api/v1/collections/{private.pk}/", {"visibility": "private"}, format="json")
    assert charlie_api.get(f"/api/v1/collections/{private.pk}/").status_code == 404
    assert charlie_api.get(f"/api/v1/collections/link/{token}/").status_code == 404


def test_search_never_returns_alices_private_chunks_even_as_the_best_match(alices, charlie_api):
    ids = [alices["c"][key].pk for key in ("public", "admin")]
    response = charlie_api.post(
        "/api/v1/retrieve/", {"question": QUESTION, "collections": ids, "k": 10}, format="json"
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert results and {r["collection_id"] for r in results} <= set(ids)
    private_docs = {alices["d"]["private"].pk, alices["d"]["unlisted"].pk}
    assert not private_docs & {r["document_id"] for r in results + response.json()["references"]}


# --- Teams: Alice shares her private collection with two Django groups ------------------------------
#
# Dora is in "readers" (read), Erin in "writers" (read and write); Fred was in "writers" and was
# removed; Charlie is in no team; Sam is staff (staff read nothing private). Every role asks every
# question below and gets the answer its column says.

OWNER, READER, WRITER, FORMER, OUTSIDER, STAFF = "alice", "dora", "erin", "fred", "charlie", "sam"
# Reads: members and the owner read; anyone else is told the collection does not exist.
READ = {OWNER: 200, READER: 200, WRITER: 200, FORMER: 404, OUTSIDER: 404, STAFF: 404}
# Owner-only management: members (who can read it) are forbidden, the rest told it does not exist.
MANAGE = {READER: 403, WRITER: 403, FORMER: 404, OUTSIDER: 404, STAFF: 404}


@pytest.fixture
def teams(alices, alice, make_user, tmp_path, settings):
    from django.contrib.auth.models import Group

    from knowledge.services.sources import SourceSpec, source_add
    from knowledge.services.teams import collection_share_set

    users = {OWNER: alice, **{name: make_user(name) for name in (READER, WRITER, FORMER)}}
    users[OUTSIDER] = make_user(OUTSIDER)
    users[STAFF] = make_user(STAFF, is_staff=True)
    readers, writers = Group.objects.create(name="readers"), Group.objects.create(name="writers")
    alice.groups.add(readers, writers)  # an owner shares with teams she is in
    users[READER].groups.add(readers)
    users[WRITER].groups.add(writers)
    users[FORMER].groups.add(writers)
    private = alices["c"]["private"]
    collection_share_set(collection=private, user=alice, group="readers", can_write=False)
    collection_share_set(collection=private, user=alice, group=writers.pk, can_write=True)
    users[FORMER].groups.remove(writers)
    settings.KNOWLEDGE_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    (tmp_path / "glossary.md").write_text("# Glossary\n\nA gravity hill is an optical illusion.\n")
    source = source_add(
        collection=private,
        spec=SourceSpec(location=str(tmp_path), kind="folder", grace_hours=0),
        user=alice,
        operator=True,
    )
    return {**alices, "users": users, "groups": {"readers": readers, "writers": writers}, "source": source}


def _api_as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='matrix')[1]}")
    return client


def _web_as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _team_api_calls(t):
    c, d, s = t["c"]["private"].pk, t["d"]["private"].pk, t["source"].pk
    readers = t["groups"]["readers"].pk
    ask = {"question": QUESTION, "collections": [c]}
    return [
        ("get", f"/api/v1/collections/{c}/", None, READ),
        ("get", f"/api/v1/collections/{c}/documents/", None, READ),
        ("get", f"/api/v1/documents/{d}/", None, READ),
        ("get", f"/api/v1/collections/{c}/sources/", None, READ),
        ("get", f"/api/v1/sources/{s}/", None, READ),
        ("post", "/api/v1/retrieve/", ask, READ),
        ("post", "/api/v1/query/", ask, READ),
        ("get", f"/api/v1/collections/{c}/subscriptions/", None, {**MANAGE, OWNER: 200}),
        ("get", f"/api/v1/collections/{c}/shares/", None, {**MANAGE, OWNER: 200}),
        ("patch", f"/api/v1/collections/{c}/", {"description": "mine now"}, MANAGE),
        ("patch", f"/api/v1/collections/{c}/", {"visibility": "public"}, MANAGE),
        ("patch", f"/api/v1/collections/{c}/", {"listed": True}, MANAGE),
        ("post", f"/api/v1/collections/{c}/share-link/", None, MANAGE),
        ("post", f"/api/v1/collections/{c}/shares/", {"group": "writers", "access": "write"}, MANAGE),
        ("delete", f"/api/v1/collections/{c}/shares/{readers}/", None, MANAGE),
        ("delete", f"/api/v1/collections/{c}/", None, MANAGE),
        # Content writes, refused to everyone but writers (done for real in the write tests below).
        ("delete", f"/api/v1/documents/{d}/", None, {**MANAGE, WRITER: None, OWNER: None}),
        ("post", f"/api/v1/documents/{d}/reindex/", {}, {**MANAGE, WRITER: None, OWNER: None}),
        ("post", f"/api/v1/sources/{s}/sync/", None, {**MANAGE, WRITER: None, OWNER: None}),
        ("delete", f"/api/v1/sources/{s}/", None, {**MANAGE, WRITER: None, OWNER: None}),
    ]


def _team_pages(t):
    c, d, s = t["c"]["private"].pk, t["d"]["private"].pk, t["source"].pk
    readers = t["groups"]["readers"].pk
    no_writes = {**MANAGE, WRITER: None, OWNER: None}
    return [
        ("get", f"/collections/{c}/", None, READ),
        ("get", f"/collections/{c}/documents.json", None, READ),
        ("get", f"/documents/{d}/view/", None, READ),
        ("get", f"/documents/{d}/file/", None, READ),
        ("get", f"/chat/?collection={c}", None, READ),
        ("post", f"/collections/{c}/settings/", {"action": "details", "name": "mine now"}, MANAGE),
        ("post", f"/collections/{c}/settings/", {"action": "visibility", "visibility": "public"}, MANAGE),
        ("post", f"/collections/{c}/settings/", {"action": "rotate_link"}, MANAGE),
        ("post", f"/collections/{c}/settings/", {"action": "delete"}, MANAGE),
        ("post", f"/collections/{c}/listing/", {"listed": "1"}, MANAGE),
        ("post", f"/collections/{c}/teams/", {"action": "unshare", "group": readers}, MANAGE),
        (
            "post",
            f"/collections/{c}/teams/",
            {"action": "share", "group": readers, "access": "write"},
            MANAGE,
        ),
        ("post", f"/collections/{c}/upload/", {}, no_writes),
        ("post", f"/documents/{d}/delete/", None, no_writes),
        ("post", f"/sources/{s}/sync/", None, no_writes),
        ("post", f"/collections/{c}/settings/", {"action": "reindex", "chunk_profile": "1"}, no_writes),
    ]


def test_every_role_gets_its_answer_on_every_api_call_and_page(teams):
    """The matrix: one row per call, one column per role; nothing a refused call touched changed."""
    failures = []
    for role, user in teams["users"].items():
        api, web = _api_as(user), _web_as(user)
        for method, url, body, expected in _team_api_calls(teams):
            if expected.get(role) is not None:
                got = getattr(api, method)(url, body, format="json").status_code
                if got != expected[role]:
                    failures.append((role, method, url, got, expected[role]))
        for method, url, body, expected in _team_pages(teams):
            if expected.get(role) is not None:
                got = getattr(web, method)(url, body or {}).status_code
                if got != expected[role]:
                    failures.append((role, method, url, got, expected[role]))
    assert not failures
    private = teams["c"]["private"]
    private.refresh_from_db()
    assert (private.name, private.description, private.visibility, private.listed) == (
        "alice private",
        "",
        "private",
        False,
    )
    assert Document.objects.filter(pk=teams["d"]["private"].pk, status="ready").exists()
    assert set(private.shares.values_list("group__name", "can_write")) == {
        ("readers", False),
        ("writers", True),
    }
    assert teams["source"].syncs.count() == 0


def test_mcp_tools_answer_each_role_like_the_api(teams):
    from config.base.errors import ForbiddenError, NotFoundError
    from knowledge.mcp import tools

    private = teams["c"]["private"]
    passage = Chunk.objects.filter(document=teams["d"]["private"]).values_list("pk", flat=True).first()
    reading_tools = {
        "answer_research_question": {"question": QUESTION, "collections": [private.pk]},
        "agentic_research_question": {"question": QUESTION, "collections": [private.pk]},
        "get_passage": {"chunk": passage},
        "optimize_search": {"queries": [QUESTION, "another wording"], "collections": [private.pk]},
    }
    for role, user in teams["users"].items():
        listed = {row["id"]: row for row in tools.list_collections(user=user, base_url="")["collections"]}
        if READ[role] == 200:
            found = tools.search_knowledge(
                user=user, base_url="", question=QUESTION, collections=[private.pk]
            )
            assert {r["document_id"] for r in found["results"]} == {teams["d"]["private"].pk}, role
            assert private.pk in listed, role
            for name, arguments in reading_tools.items():
                assert getattr(tools, name)(user=user, base_url="", **arguments), (role, name)
        else:
            with pytest.raises(NotFoundError):
                tools.search_knowledge(user=user, base_url="", question=QUESTION, collections=[private.pk])
            with pytest.raises(NotFoundError):
                tools.reindex_collection(user=user, base_url="", collection=private.pk)
            for name, arguments in reading_tools.items():
                with pytest.raises(NotFoundError):
                    getattr(tools, name)(user=user, base_url="", **arguments)
            assert private.pk not in listed, role
    with pytest.raises(ForbiddenError):
        tools.reindex_collection(user=teams["users"][READER], base_url="", collection=private.pk)
    assert (
        tools.reindex_collection(user=teams["users"][WRITER], base_url="", collection=private.pk)[
            "documents_queued"
        ]
        == 1
    )
    # How each reaches it: through a team, and with which access; the owner through none.
    rows = {
        role: next(
            r
            for r in tools.list_collections(user=teams["users"][role], base_url="")["collections"]
            if r["id"] == private.pk
        )
        for role in (OWNER, READER, WRITER)
    }
    assert [(t["name"], t["access"]) for t in rows[READER]["teams"]] == [("readers", "read")]
    assert [(t["name"], t["access"]) for t in rows[WRITER]["teams"]] == [("writers", "write")]
    assert (rows[READER]["can_write"], rows[WRITER]["can_write"], rows[OWNER]["can_write"]) == (
        False,
        True,
        True,
    )
    assert not rows[WRITER]["can_manage"] and rows[OWNER]["can_manage"]
    assert rows[WRITER]["share_token"] is None and rows[OWNER]["share_token"]


def test_a_group_writer_uploads_reindexes_syncs_and_deletes_and_a_reader_cannot(teams, corpus):
    private, document = teams["c"]["private"], teams["d"]["private"]
    reader, writer = _api_as(teams["users"][READER]), _api_as(teams["users"][WRITER])
    upload = (corpus / "text" / "gravity_hill.md").read_bytes().replace(b"gravity", b"magnetic")

    def send(client):
        from django.core.files.uploadedfile import SimpleUploadedFile

        file = SimpleUploadedFile("magnetic_hill.md", upload, content_type="text/markdown")
        return client.post(f"/api/v1/collections/{private.pk}/documents/", {"file": file}, format="multipart")

    assert send(reader).status_code == 403
    added = send(writer)
    assert added.status_code == 201, added.content
    assert reader.post(f"/api/v1/documents/{document.pk}/reindex/", {}, format="json").status_code == 403
    assert writer.post(f"/api/v1/documents/{document.pk}/reindex/", {}, format="json").status_code == 202
    assert reader.post(f"/api/v1/sources/{teams['source'].pk}/sync/").status_code == 403
    assert writer.post(f"/api/v1/sources/{teams['source'].pk}/sync/").status_code == 202
    assert teams["source"].syncs.get().added == 1  # the glossary, read from the folder
    assert reader.delete(f"/api/v1/documents/{document.pk}/").status_code == 403
    assert writer.delete(f"/api/v1/documents/{document.pk}/").status_code == 204
    assert not Document.objects.filter(pk=document.pk).exists()
    assert writer.delete(f"/api/v1/sources/{teams['source'].pk}/").status_code == 204


def test_the_collection_page_shows_writers_content_controls_and_only_the_owner_management(teams):
    private = teams["c"]["private"]
    pages = {
        role: _web_as(teams["users"][role]).get(f"/collections/{private.pk}/").content.decode()
        for role in (OWNER, READER, WRITER)
    }
    content = ['id="upload-form"', 'class="danger">Delete</button>', 'id="reindex-form"', "Sync now"]
    management = [
        'id="teams"',
        'id="visibility-form"',
        'id="edit-details"',
        'id="delete-collection-form"',
        'id="share-url"',
        'id="listing-form"',
        private.share_token,
    ]
    for marker in content:
        assert marker in pages[OWNER] and marker in pages[WRITER] and marker not in pages[READER], marker
    for marker in management:
        assert marker in pages[OWNER] and marker not in pages[WRITER] and marker not in pages[READER], marker
    assert "shared with your team writers (read and write)" in pages[WRITER]
    assert "shared with your team readers (read)" in pages[READER]
    listing = _web_as(teams["users"][READER]).get("/collections/").content.decode()
    assert "alice private" in listing and "team readers" in listing
    # The page's re-index works for a writer, not for a reader.
    from knowledge.models import ChunkProfile

    profile = ChunkProfile.objects.get(pk=private.chunk_profile_id)
    body = {"action": "reindex", "chunk_profile": profile.pk}
    assert (
        _web_as(teams["users"][READER]).post(f"/collections/{private.pk}/settings/", body).status_code == 403
    )
    assert (
        _web_as(teams["users"][WRITER]).post(f"/collections/{private.pk}/settings/", body).status_code == 302
    )


def test_a_removed_member_finds_nothing_at_their_very_next_search(teams):
    """Membership is joined in the SQL, so the compiled rule kept per user cannot keep a member in."""
    from knowledge.mcp import tools

    private, document = teams["c"]["private"], teams["d"]["private"]
    dora = teams["users"][READER]
    profile = Profile.objects.create(owner=dora, name="dora profile", tag="dp")
    ProfileCollection.objects.create(profile=profile, collection=private)
    api = _api_as(dora)
    by_id = {"question": QUESTION, "collections": [private.pk]}
    by_profile = {"question": QUESTION, "profile": profile.pk}
    for body in (by_id, by_profile):  # twice each: the rule's SQL is compiled and kept
        for _ in range(2):
            found = api.post("/api/v1/retrieve/", body, format="json").json()["results"]
            assert {r["document_id"] for r in found} == {document.pk}
    assert tools.search_knowledge(user=dora, base_url="", question=QUESTION, collections=[private.pk])[
        "results"
    ]

    dora.groups.remove(teams["groups"]["readers"])

    assert api.post("/api/v1/retrieve/", by_id, format="json").status_code == 404
    through_profile = api.post("/api/v1/retrieve/", by_profile, format="json")
    assert through_profile.status_code == 200 and not through_profile.json()["results"]
    with pytest.raises(Exception, match="no such collection"):
        tools.search_knowledge(user=dora, base_url="", question=QUESTION, collections=[private.pk])
    assert api.get(f"/api/v1/collections/{private.pk}/").status_code == 404


def test_the_shares_api_lets_the_owner_share_with_her_own_teams_only(teams, make_user):
    from django.contrib.auth.models import Group

    private, handbook = teams["c"]["private"], teams["c"]["admin"]
    alice = _api_as(teams["users"][OWNER])
    strangers = Group.objects.create(name="strangers")
    url = f"/api/v1/collections/{private.pk}/shares/"
    listed = alice.get(url).json()["results"]
    assert [(s["group_name"], s["access"], s["created_by"]) for s in listed] == [
        ("readers", "read", "alice"),
        ("writers", "write", "alice"),
    ]
    changed = alice.post(url, {"group": "readers", "access": "write"}, format="json")
    assert changed.status_code == 200 and changed.json()["access"] == "write"
    for body in ({"group": "strangers"}, {"group": strangers.pk}, {"group": "nobody"}):
        refused = alice.post(url, body, format="json")
        assert refused.status_code == 404 and "team you are in" in refused.json()["error"]["message"], (
            refused.json()
        )
    for body in (
        {},
        {"group": True},
        {"group": ["readers"]},
        {"group": "readers", "access": "admin"},
        {"group": "readers", "extra": 1},
    ):
        assert alice.post(url, body, format="json").status_code == 400, body
    assert not private.shares.filter(group=strangers).exists()
    assert alice.delete(f"{url}{strangers.pk}/").status_code == 404
    assert alice.delete(f"{url}{teams['groups']['readers'].pk}/").status_code == 204
    assert _api_as(teams["users"][READER]).get(f"/api/v1/collections/{private.pk}/").status_code == 404
    # Staff share an admin-owned collection with any team; its members write it, not manage it.
    sam = _api_as(teams["users"][STAFF])
    created = sam.post(
        f"/api/v1/collections/{handbook.pk}/shares/", {"group": "strangers", "access": "write"}, format="json"
    )
    assert created.status_code == 201 and created.json()["created_by"] == STAFF
    stranger = make_user("stranger")
    stranger.groups.add(strangers)
    body = _api_as(stranger).get(f"/api/v1/collections/{handbook.pk}/").json()
    assert (body["can_write"], body["can_manage"], body["teams"][0]["name"]) == (True, False, "strangers")
    assert (
        _api_as(stranger)
        .post(f"/api/v1/collections/{handbook.pk}/shares/", {"group": "strangers"}, format="json")
        .status_code
        == 403
    )
