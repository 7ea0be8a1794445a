"""Test settings: the real settings, with background tasks run in-process."""

import os

os.environ.setdefault("KNOWLEDGE_SYNC_TASKS", "true")

from config.settings import *  # noqa: E402,F403
from config.settings import DATA_DIR, Q_CLUSTER  # noqa: E402

Q_CLUSTER = {**Q_CLUSTER, "sync": True}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast user creation
MEDIA_ROOT = DATA_DIR / "test-media"  # keep test uploads out of the application's files
