"""The environment is exactly requirements.lock: what a fresh machine installs is what was tested."""

import re
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"
PROJECT = "knowledge"  # installed editable from the checkout, not from the lock


def locked_versions() -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", LOCK.read_text(), flags=re.MULTILINE)
    return {canonicalize_name(name): version for name, version in pins}


def installed_versions() -> dict[str, str]:
    installed = {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
    installed.pop(PROJECT, None)
    return installed


def test_every_locked_version_is_hash_checked():
    text = LOCK.read_text()
    pinned = re.findall(r"^([A-Za-z0-9._-]+)==", text, flags=re.MULTILINE)
    first_hash = r"^([A-Za-z0-9._-]+)==\S+ \\\n\s+--hash=sha256:[0-9a-f]{64}"
    hashed = re.findall(first_hash, text, flags=re.MULTILINE)
    assert pinned and hashed == pinned


def test_the_environment_holds_exactly_the_locked_versions():
    locked, installed = locked_versions(), installed_versions()
    assert len(locked) > 100
    differences = {
        name: (locked.get(name), installed.get(name))
        for name in locked.keys() | installed.keys()
        if locked.get(name) != installed.get(name)
    }
    assert differences == {}, "(locked, installed) per package; run `make install` or `make lock`"
