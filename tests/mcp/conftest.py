"""A live server for the MCP tests: uvicorn serving config.asgi on 127.0.0.1, on the test database.

The server is a child process started once for the package (loading Django and
the embedding model is the slow part); each test creates its own users, tokens
and collections, which the server reads from the same database. Clients are
the ``mcp`` SDK's own, over Streamable HTTP and over stdio.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from django.db import connections
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.api_tokens import token_create
from knowledge.services.collections import collection_create
from knowledge.services.documents import DocumentUpload, document_upload
from tests.conftest import CORPUS, REPO_ROOT, test_database_url
from tests.served import free_port, wait_for_port

TOOLS = {
    "list_collections",
    "search_knowledge",
    "answer_research_question",
    "agentic_research_question",
    "get_passage",
    "optimize_search",
    "reindex_collection",
}
STARTUP_SECONDS = 180


LLM_ENVIRONMENT = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_API_KEY_FILE", "LLM_MODEL")


def server_environment() -> dict[str, str]:
    """What a child process needs to use the test database and the test settings, offline.

    No LLM from the environment: a test that wants one configures it in the
    database (LLMSettings), which the running server reads on every answer.
    """
    inherited = {name: value for name, value in os.environ.items() if name not in LLM_ENVIRONMENT}
    return {
        **inherited,
        "DATABASE_URL": test_database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "HF_HUB_OFFLINE": "1",
    }


class LiveServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp/"
        self.log = tempfile.NamedTemporaryFile(prefix="mcp-uvicorn-", suffix=".log", delete=False)  # noqa: SIM115
        command = [sys.executable, "-m", "uvicorn", "config.asgi:application"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--lifespan", "on"]
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=server_environment(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_until_ready(self) -> None:
        wait_for_port(self.port, self.process, self.output, seconds=STARTUP_SECONDS)

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")[-5000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
        os.unlink(self.log.name)


@pytest.fixture(scope="package")
def live_mcp(django_db_setup, django_db_blocker):
    """The application served by uvicorn, MCP at ``.url``."""
    server = LiveServer()
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def http_client(url: str, token: str, **options):
    """The SDK's client over Streamable HTTP, sending the API token as a Bearer header."""
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    ) as http:
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


def stdio_parameters(username: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "knowledge_mcp", "--user", username, "--base-url", "https://kb.example.test"],
        env=server_environment(),
        cwd=str(REPO_ROOT),
    )


def run(scenario, *args):
    """Run an async client scenario from a (synchronous) test."""
    return anyio.run(scenario, *args)


@pytest.fixture
def no_persistent_connections():
    """In-process tool calls (``Client(build_server(...))``) run in worker threads, which keep their
    connection for CONN_MAX_AGE; here each call closes it, so the test database can be dropped at the
    end (a server process would simply exit)."""
    database = connections.settings["default"]  # the dict every thread's connection is made from
    saved = database["CONN_MAX_AGE"]
    database["CONN_MAX_AGE"] = 0
    yield
    database["CONN_MAX_AGE"] = saved


@pytest.fixture
def token_for():
    def make(user) -> str:
        return token_create(user=user, name="mcp tests")[1]

    return make


@pytest.fixture
def hills(alice):
    """Alice's private collection with one Markdown article."""
    collection = collection_create(name="hills", owner=alice, description="gravity hills")
    path = CORPUS / "text" / "gravity_hill.md"
    document_upload(collection=collection, upload=DocumentUpload(filename=path.name, data=path.read_bytes()))
    return collection


@pytest.fixture
def bob_collections(bob):
    """Bob's private collection with a document, and his public one (empty)."""
    secret = collection_create(name="bob secret", owner=bob, description="bob's own notes")
    path = CORPUS / "office" / "dummy.docx"
    document = document_upload(
        collection=secret, upload=DocumentUpload(filename=path.name, data=path.read_bytes())
    ).document
    shared = collection_create(name="bob shared", owner=bob, visibility="public")
    return {"secret": secret, "shared": shared, "document": document}


def payload(result) -> dict:
    """A tool result's JSON (structured content), failing the test on a tool error."""
    assert not result.is_error, result.content[0].text
    return result.structured_content


def error_text(result) -> str:
    """A tool error's message, failing the test when the call succeeded."""
    assert result.is_error, result.structured_content
    return result.content[0].text
