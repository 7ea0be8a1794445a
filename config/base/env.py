"""Typed readers for environment variables that fail loudly on bad values.

Every setting the operator can change from the environment goes through one of
these, so a typo ("ture", "50MB") stops the process with a clear message
instead of silently falling back to a default.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """A string from NAME, or from the file named by NAME_FILE (for secrets)."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_data_dir() -> Path:
    """KNOWLEDGE_DATA_DIR, by default var/ in the project: the embedded PostgreSQL, files, the secret key.

    Read here, not only in the settings: the embedded server's watch (config.base.database_watch)
    finds that server without loading the settings, which would join it as a client.
    """
    project = Path(__file__).resolve().parent.parent.parent
    return Path(env_str("KNOWLEDGE_DATA_DIR", str(project / "var"))).resolve()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_or_none(name: str, *, minimum: int = 0) -> int | None:
    """An integer, or None when NAME is unset or empty (no limit)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return env_int(name, 0, minimum=minimum)


_SIZE_UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def env_size_or_none(name: str) -> int | None:
    """A size in bytes ("1048576", "500MB", "2 GB"; units are powers of 1024), or None when unset."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    text = raw.strip().upper().replace(" ", "")
    number = text.rstrip("KMGTB")
    unit = text[len(number) :]
    if not number.isdigit() or unit not in _SIZE_UNITS:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a size (bytes, or a number with KB, MB, GB or TB)")
    return int(number) * _SIZE_UNITS[unit]


def env_origin(name: str, default: str) -> str:
    """An origin, ``http(s)://host[:port]`` with nothing after it (a trailing slash is dropped)."""
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw.strip()
    try:
        return origin_normalized(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an origin: {exc}") from exc


def origin_normalized(value: str) -> str:
    """``value`` as scheme://host[:port], lower case; ValueError says what is wrong with it."""
    parts = urlsplit(value.removesuffix("/"))
    if parts.scheme not in ("http", "https"):
        raise ValueError("give http:// or https:// and the host name, e.g. https://kb.example.com")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ValueError("give a host name (and a port if not the scheme's), without user or password")
    if parts.path or parts.query or parts.fragment:
        raise ValueError("nothing may follow the host and port (no path, query or fragment)")
    parts.port  # noqa: B018 (raises ValueError for a port out of range or not a number)
    return f"{parts.scheme}://{parts.netloc.lower()}"


def served_origin(host: str, port: int) -> str:
    """Where ``make run`` serves (HOST, PORT), as a browser on this machine reaches it.

    A wildcard bind address (0.0.0.0, ::) is no place to send anyone: this machine's loopback
    stands in, and an operator serving others sets the public address."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    return f"http://{host}:{port}"
