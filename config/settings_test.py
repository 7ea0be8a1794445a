"""Test settings: the real settings, with background tasks run in-process."""

import os

os.environ.setdefault("KNOWLEDGE_SYNC_TASKS", "true")

from config.settings import *  # noqa: E402,F403
from config.settings import DATA_DIR, Q_CLUSTER  # noqa: E402

Q_CLUSTER = {**Q_CLUSTER, "sync": True}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast user creation
MEDIA_ROOT = DATA_DIR / "test-media"  # keep test uploads out of the application's files

# Django's test flush empties every table with TRUNCATE, which the audit log's trigger refuses
# unless the session allows it (accounts migration 0006): only the test suite's sessions do.
DATABASES["default"]["OPTIONS"]["options"] += " -c knowledge.audit_truncate=on"  # noqa: F405
