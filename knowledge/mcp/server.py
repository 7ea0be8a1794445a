"""The knowledge base as Model Context Protocol tools, on the official ``mcp`` SDK (2.x, ``MCPServer``).

Why this library: the official SDK implements the current protocol
(Streamable HTTP, the 2026-07-28 stateless requests and the older
initialize handshake, stdio) and is what the clients we test against use.
``django-mcp-server`` 0.5.7 was the Django-native alternative, but it imports
``mcp.server.FastMCP``, which the 2.x SDK removed, so it cannot run on it;
it also answers through a synchronous view that buffers the whole response
and starts a session manager per request. Serving the SDK's ASGI app next to
Django's (config.asgi) keeps streaming and the SDK's lifecycle intact, and the
tools stay thin callers of the services the REST API uses (knowledge.mcp.tools).

One server definition serves both transports; only who the caller is
differs (``Identity``): over HTTP the user of the request's API token
(knowledge.mcp.http), over stdio the user named on the command line.

Database work runs in a worker thread (``sync_to_async``), never on the event
loop, and each call starts and ends the way a Django request does
(``close_old_connections``): its connection goes back to the pool (or is closed
when broken or past CONN_MAX_AGE), so no call leaks one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated

from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from rest_framework import serializers
from rest_framework.exceptions import Throttled

from accounts.api.errors import error_body_for
from accounts.audit import audit_context
from accounts.models import AuditEvent
from config.base.errors import NotFoundError
from config.base.validation import id_or_none, unstorable_location
from knowledge.mcp import tools
from knowledge.mcp.identity import Identity
from knowledge.mcp.resources import collection_summary
from knowledge.mcp.throttle import throttle_check

logger = logging.getLogger(__name__)

SERVER_NAME = "knowledge"

INSTRUCTIONS = """\
This server answers questions strictly from the documents in the user's knowledge collections
(PDF, Office, HTML, Markdown, text, OpenAPI), with citations that point at the exact page, slide,
sheet, heading or API element. It acts as one user and sees only what that user may read.

Start with list_collections to learn the collection and profile ids. Then:
- answer_research_question for a question with a cited answer (quick factual lookups);
- agentic_research_question for multi-hop or comparative questions (slower, more LLM calls);
- search_knowledge for ranked passages without an answer (to read and judge the evidence yourself);
- get_passage to read a cited place in full, with the text around it;
- optimize_search to measure retrieval quality and latency for sample queries;
- reindex_collection to rebuild a collection's index, e.g. under another chunk profile: for whoever
  may change its documents (its owner, a team it is shared with for writing; staff for admin-owned
  ones). Calling it again while the re-index is under way queues nothing again.

Answers carry [Source N] markers matching their citations; keep them when quoting, and say so when
the answer mode is "no_results" instead of guessing. Pass the returned session id to continue a
conversation with follow-up questions. An id you cannot read is reported as "not found".
"""

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
ANSWERS = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
REINDEX = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)

Question = Annotated[
    str, Field(description="The question, in natural language.", min_length=1, max_length=4000)
]
Collections = Annotated[
    list[int] | None,
    Field(description="Collection ids to search (from list_collections).", min_length=1, max_length=100),
]
ProfileId = Annotated[
    int | None, Field(description="A profile id (from list_collections): its collections and settings.", ge=1)
]
SessionId = Annotated[
    int | None, Field(description="Continue this chat session (the 'session' of an earlier answer).", ge=1)
]


def build_server(identity: Identity) -> MCPServer:
    """The MCP server with every tool, resource and prompt; ``identity`` says who calls."""
    server = MCPServer(
        SERVER_NAME,
        title="Knowledge collections",
        description="Cited answers and passages from your document collections.",
        instructions=INSTRUCTIONS,
        version="1.0",
    )
    _add_tools(server, identity)
    _add_resources(server, identity)
    _add_prompts(server)
    return server


async def run_tool(
    identity: Identity,
    ctx: Context,
    function: Callable[..., dict],
    *,
    throttle: str | None = None,
    **arguments,
) -> CallToolResult:
    """Run a tool function as the caller, in a worker thread; application errors become tool errors.

    ``throttle`` is the REST API's throttle scope for the same work ("retrieve" for searches and answers).
    """
    base_url = identity.base_url(ctx)
    try:
        data = await sync_to_async(_as_caller, thread_sensitive=False)(
            identity, ctx, function, base_url, throttle, arguments
        )
    except Exception as exc:
        body = error_body_for(exc)
        if body is None:
            raise  # a bug: the SDK logs it and answers "Error executing tool ..." without details
        logger.info("MCP tool %s refused: %s", function.__name__, body["error"]["message"])
        return CallToolResult(
            content=[TextContent(type="text", text=body["error"]["message"])],
            structured_content=body,
            is_error=True,
        )
    plain = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(plain, ensure_ascii=False, indent=1))],
        structured_content=plain,
    )


def _as_caller(identity: Identity, ctx: Context, function, base_url: str, throttle, arguments: dict):
    """In the worker thread: the same connection hygiene as a Django request around the call."""
    close_old_connections()
    try:
        user = identity.user(ctx)
        throttle_check(user=user, scope=throttle)
        _refuse_nul(arguments)
        with audit_context(channel=AuditEvent.Channel.MCP, actor=user, address=identity.address(ctx)):
            return function(user=user, base_url=base_url, **arguments)
    finally:
        close_old_connections()


def _refuse_nul(arguments: dict) -> None:
    """PostgreSQL cannot hold NUL or a lone surrogate in text: refused anywhere in the arguments, as the
    API refuses them."""
    found = unstorable_location(arguments, name="arguments")
    if found:
        where, problem = found
        raise serializers.ValidationError({where: [problem]})


def _add_tools(server: MCPServer, identity: Identity) -> None:
    """Every tool, in the order clients list them."""
    _add_search_tools(server, identity)
    _add_answer_tools(server, identity)
    _add_passage_tools(server, identity)
    _add_index_tools(server, identity)


def _add_search_tools(server: MCPServer, identity: Identity) -> None:
    """Browsing and searching: what there is to search, and ranked passages."""

    @server.tool(title="List collections and profiles", annotations=READ_ONLY)
    async def list_collections(
        ctx: Context,
        search: Annotated[
            str, Field(description="Only collections whose name or description has this.")
        ] = "",
    ) -> CallToolResult:
        """The collections you can search (yours, public and admin-owned ones, subscriptions), each with
        its description, tags, visibility, owner, document and chunk counts and whether you subscribe,
        and the profiles you can ask with (a profile is a saved set of collections and settings)."""
        return await run_tool(identity, ctx, tools.list_collections, throttle="retrieve", search=search)

    @server.tool(title="Search passages", annotations=READ_ONLY)
    async def search_knowledge(
        ctx: Context,
        question: Question,
        collections: Collections = None,
        profile: ProfileId = None,
        k: Annotated[
            int | None, Field(description="How many passages (default: the profile's maxDocs).", ge=1, le=100)
        ] = None,
    ) -> CallToolResult:
        """Ranked passages for a question, without writing an answer: for each, the document, title,
        source_ref (page=N, slide=N, sheet=NAME, heading=TEXT, operation=METHOD /path ...), text,
        scores (similarity, lexical and fused ranks) and a URL to the cited place; plus the passages
        they reference (e.g. the schema an API operation uses). Give collections, a profile, or both
        (a profile narrowed to those collections)."""
        return await run_tool(
            identity,
            ctx,
            tools.search_knowledge,
            throttle="retrieve",
            question=question,
            collections=collections,
            profile=profile,
            k=k,
        )


def _add_answer_tools(server: MCPServer, identity: Identity) -> None:
    """Answers with citations, standard and agentic: one signature, two tool functions."""
    for name, title, description in ANSWER_TOOLS:
        answer = _answer_tool(identity, getattr(tools, name))
        answer.__name__ = answer.__qualname__ = name  # the SDK names the input schema after it
        server.tool(name=name, title=title, description=description, annotations=ANSWERS)(answer)


ANSWER_TOOLS = (
    (
        "answer_research_question",
        "Answer with citations",
        """Answer a question from the documents, with [Source N] citations (document, source_ref, URL),
        the sources searched and the tokens used; the same as the REST API's /api/v1/query/. The
        answer is written by the configured LLM, or extracted verbatim from the sources when none is
        configured (mode "extractive"); mode "no_results" means nothing relevant was found. Best for
        factual lookups; use agentic_research_question for multi-hop questions. Saved as a chat
        session: pass its id as `session` to ask a follow-up.""",
    ),
    (
        "agentic_research_question",
        "Answer with the agentic loop",
        """Like answer_research_question, but through the agentic loop: it classifies the question,
        expands and decomposes it, routes to documents, grades what it retrieves, rewrites weak
        queries and checks the answer is grounded, then answers with citations. Slower and uses more
        LLM calls: for multi-hop, comparative or synthesis questions. Returns the answer with its
        steps and trace; when the operator has switched agentic retrieval off it returns the standard
        answer (agentic: false).""",
    ),
)


def _answer_tool(identity: Identity, function: Callable[..., dict]):
    """An answer tool calling ``function`` (knowledge.mcp.tools); the SDK reads its signature."""

    async def answer(
        ctx: Context,
        question: Question,
        collections: Collections = None,
        profile: ProfileId = None,
        session: SessionId = None,
    ) -> CallToolResult:
        return await run_tool(
            identity,
            ctx,
            function,
            throttle="retrieve",
            question=question,
            collections=collections,
            profile=profile,
            session=session,
        )

    return answer


def _add_passage_tools(server: MCPServer, identity: Identity) -> None:
    """Reading a cited place, and measuring search quality."""

    @server.tool(title="Read a cited passage", annotations=READ_ONLY)
    async def get_passage(
        ctx: Context,
        chunk: Annotated[
            int | None, Field(description="A passage's chunk_id (from search or citations).", ge=1)
        ] = None,
        document: Annotated[int | None, Field(description="A document id, with source_ref.", ge=1)] = None,
        source_ref: Annotated[
            str | None,
            Field(description="A place in the document, e.g. page=4 or heading=Methods.", max_length=1000),
        ] = None,
        neighbours: Annotated[
            int, Field(description="Passages to include before and after.", ge=0, le=3)
        ] = 1,
    ) -> CallToolResult:
        """The full text at a cited place (every passage with that source_ref, overlaps removed) and
        the passages just before and after it, with a URL to open it. Give a chunk id, or a document id
        and a source_ref."""
        return await run_tool(
            identity,
            ctx,
            tools.get_passage,
            throttle="retrieve",
            chunk=chunk,
            document=document,
            source_ref=source_ref,
            neighbours=neighbours,
        )

    @server.tool(title="Measure search quality", annotations=READ_ONLY)
    async def optimize_search(
        ctx: Context,
        queries: Annotated[
            list[str], Field(description="Sample questions (1 to 10).", min_length=1, max_length=10)
        ],
        collections: Collections = None,
        profile: ProfileId = None,
        k: Annotated[int | None, Field(description="Passages per query.", ge=1, le=100)] = None,
    ) -> CallToolResult:
        """For each query: relevance scores and latency of semantic-only (dense) and hybrid (semantic +
        full-text) search, and with the profile's LLM reranking when it has any; what hybrid search
        and reranking changed (passages added, dropped, top result); and averages over the queries.
        Use it to decide whether hybrid search or reranking helps for these collections."""
        return await run_tool(
            identity,
            ctx,
            tools.optimize_search,
            throttle="retrieve",
            queries=queries,
            collections=collections,
            profile=profile,
            k=k,
        )


def _add_index_tools(server: MCPServer, identity: Identity) -> None:
    """Rebuilding a collection's index (the only tool that changes anything)."""

    @server.tool(title="Rebuild a collection's index", annotations=REINDEX)
    async def reindex_collection(
        ctx: Context,
        collection: Annotated[int, Field(description="The collection id.", ge=1)],
        chunk_profile: Annotated[
            str | None,
            Field(description="Switch to this chunk profile (by name); default: keep the current one."),
        ] = None,
    ) -> CallToolResult:
        """Re-chunk and re-embed every document of a collection whose documents you may change (you
        own it, or it is shared with a team of yours for writing; staff: admin-owned ones), under its
        current chunk profile or the one named. The current chunks stay searchable until the new ones
        are ready. Returns how many documents were queued: a document still waiting for the same run
        is not queued again, so a call repeated while the re-index is under way queues none. Under
        another chunk profile, the collection's owner (staff, for admin-owned ones) also gets the
        release being built: its state, and the gate's metrics against the serving release once
        measured (it promotes the release, or holds it for the owner to decide). Each call counts one
        write against your rate, as a re-index on the API or the collection page does."""
        return await run_tool(
            identity,
            ctx,
            tools.reindex_collection,  # charges the "writes" rate itself, as the API and the page do
            collection=collection,
            chunk_profile=chunk_profile,
        )


def _add_resources(server: MCPServer, identity: Identity) -> None:
    @server.resource(
        "knowledge://collections/{collection_id}",
        name="collection",
        title="Collection summary",
        description="A collection's description and its documents, with what each is about.",
        mime_type="text/markdown",
    )
    async def collection(collection_id: str, ctx: Context) -> str:
        try:
            return await sync_to_async(_read_as_caller, thread_sensitive=False)(identity, ctx, collection_id)
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except Throttled as exc:  # the message a tool would give, with the wait
            raise ResourceError(error_body_for(exc)["error"]["message"]) from None


def _read_as_caller(identity: Identity, ctx: Context, collection_id: str) -> str:
    close_old_connections()
    try:
        number = id_or_none(collection_id)
        if number is None:
            raise NotFoundError("no such collection")
        user = identity.user(ctx)
        throttle_check(user=user, scope="retrieve")  # reads as the API's retrieval does
        return collection_summary(user=user, collection_id=number)
    finally:
        close_old_connections()


def _add_prompts(server: MCPServer) -> None:
    @server.prompt(title="Research a question with citations")
    def research(question: str) -> str:
        """Ask the assistant to answer from the knowledge base only, citing every claim."""
        return (
            f"Answer this question from my knowledge collections only: {question}\n\n"
            "Call list_collections first if you do not know which collections to use, then "
            "answer_research_question (or agentic_research_question if it needs several documents). "
            "Keep the [Source N] markers and list the cited documents with their pages or sections. "
            "If the tools find nothing relevant, say so rather than answering from memory."
        )
