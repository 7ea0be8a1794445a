"""`manage.py check --deploy` is clean under production settings (HTTPS, no DEBUG)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, test_database_url


@pytest.mark.django_db
def test_check_deploy_is_clean_under_production_settings():
    env = {
        **os.environ,
        "DEBUG": "false",
        "HTTPS": "true",
        "SECRET_KEY": secrets.token_urlsafe(64),  # 86 characters, many unique
        "ALLOWED_HOSTS": "knowledge.example.com",
        "KNOWLEDGE_PUBLIC_URL": "https://knowledge.example.com",  # where e-mailed links point
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": test_database_url(),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout, result.stdout + result.stderr
