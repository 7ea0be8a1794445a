"""The shared base every app imports: typed environment readers, the one error type, text checks,
the database configuration and backend, prepared statements. It imports neither ``knowledge`` nor
``accounts`` (tests/project/test_architecture.py); the entry points one level up (settings, urls, asgi, wsgi)
are the only modules of ``config`` that do."""
