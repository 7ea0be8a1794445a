"""Serve the MCP tools over stdio as one user, for local clients (desktop assistants, IDE agents)."""

from __future__ import annotations

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from knowledge.mcp.identity import NamedUserIdentity
from knowledge.mcp.server import build_server


class Command(BaseCommand):
    help = (
        "Serve the knowledge tools over MCP on stdin/stdout, acting as USERNAME: the client sees "
        "exactly what that user may read. Configure it as a local (stdio) server in an MCP client."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, metavar="USERNAME", help="Act as this (active) user.")
        parser.add_argument(
            "--base-url",
            default="",
            help="Where the product is served (e.g. https://kb.example.com), to make citation links "
            "absolute; without it they are relative.",
        )

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["user"], is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {options['user']!r}")
        identity = NamedUserIdentity(user_id=user.pk, base_url=options["base_url"].rstrip("/"))
        connections.close_all()  # tools use worker threads; this thread's connection would only idle
        server = build_server(identity)
        anyio.run(server.run_stdio_async)
