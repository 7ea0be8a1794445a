"""The embedded PostgreSQL is sized for the chunk table and its indexes, not PostgreSQL's 128 MB default."""

from __future__ import annotations

from config.base.database import default_shared_buffers_mb, embedded_database_url


def test_the_default_is_a_quarter_of_memory_within_bounds():
    assert 128 <= default_shared_buffers_mb() <= 1024


def test_the_embedded_server_records_its_shared_buffers_once(tmp_path):
    embedded_database_url(tmp_path, shared_buffers_mb=200)
    settings = tmp_path / "pg" / "postgresql.auto.conf"
    assert "shared_buffers = '200MB'" in settings.read_text()
    written = settings.stat().st_mtime_ns
    embedded_database_url(tmp_path, shared_buffers_mb=200)  # another process joining the server
    assert settings.stat().st_mtime_ns == written
