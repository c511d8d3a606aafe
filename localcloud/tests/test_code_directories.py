"""A function's or a layer's zip unpacked into a directory of its own (localcloud/code.py),
as Lambda unpacks it into /var/task or /opt."""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path

import pytest

from localcloud import code


def _zip(files: dict[str, bytes], when: tuple[int, ...] = (2026, 1, 2, 3, 4, 6)) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(zipfile.ZipInfo(name, when), content)
    return buffer.getvalue()


def test_the_same_files_zipped_again_find_their_directory_and_others_get_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sam build and sam package make a new zip of unchanged files (other times): its
    directory is the one already unpacked; a changed file of the same size is another one."""
    monkeypatch.setattr(code.tempfile, "tempdir", str(tmp_path))
    first = code.unpacked(_zip({"app.py": b"A = 1\n"}))
    again = code.unpacked(_zip({"app.py": b"A = 1\n"}, when=(2026, 11, 29, 8, 0, 0)))
    changed = code.unpacked(_zip({"app.py": b"A = 2\n"}))
    assert again == first != changed
    assert (changed / "app.py").read_bytes() == b"A = 2\n"


def test_threads_that_unpack_one_layer_at_once_each_get_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two functions with one layer start their first environments together: each gets the
    whole layer, never a directory another thread is still writing."""
    monkeypatch.setattr(code.tempfile, "tempdir", str(tmp_path))
    files = {f"python/lib{n}/part{k}.py": bytes([65 + n % 26]) * (4096 * (k + 1))
             for n in range(40) for k in range(5)}  # fmt: skip
    body = _zip(files)
    start, made = threading.Barrier(8), []

    def unpack() -> None:
        start.wait()
        where = code.unpacked(body)
        made.append({n: (where / n).read_bytes() == c for n, c in files.items()})

    threads = [threading.Thread(target=unpack) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(made) == 8
    assert all(all(seen.values()) for seen in made)
    assert [p.name for p in (tmp_path / "localcloud-code").iterdir()] == [
        code.unpacked(body).name  # one directory: the other makers' are gone
    ]


def test_an_entry_outside_the_archive_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code.tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ValueError, match="outside its directory"):
        code.unpacked(_zip({"ok.py": b"", "../escape.py": b"x = 1\n"}))
    assert not list((tmp_path / "localcloud-code").iterdir())  # nothing half made is left
    assert not (tmp_path / "escape.py").exists()
