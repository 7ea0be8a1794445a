"""The REST API's foundation and its token endpoints.

What every API view shares (authentication by accounts' bearer tokens or the
session, the error format, pagination, the bounded JSON parser, throttles) and
the token endpoints themselves. The knowledge app's API (knowledge.api) builds
on this base and mounts these URLs under /api/v1/; nothing here imports knowledge.
"""
