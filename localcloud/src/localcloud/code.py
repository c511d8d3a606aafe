"""A function's or a layer's code on this machine: the directory Lambda would unpack it into
(/var/task, /opt), for the deploy (stack/) and the function environments (features/) alike."""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["STAND_IN", "code_dir", "stand_in_zip", "unpacked"]

STAND_IN = "LOCALCLOUD_CODE_DIR"  # the one file of a local code directory's stand-in zip


def stand_in_zip(path: Path) -> bytes:
    """What the artifact bucket holds for a local code directory (a CodeUri, a layer's
    ContentUri): a zip naming it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(STAND_IN, str(path))
    return buffer.getvalue()


def unpacked(body: bytes, name: str = "code") -> Path:
    """The code directory of a body: a zip's (the local directory a stand-in names, else the
    zip unpacked, ValueError for an entry outside it; named by its entries' names, sizes and
    CRC-32s: the same files zipped again find it), or the one file ``name``."""
    if not zipfile.is_zipfile(io.BytesIO(body)):
        digest = hashlib.sha256(body + f"\n{name}".encode()).hexdigest()
        return _code_dir(digest, lambda: {name: body})
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        if archive.namelist() == [STAND_IN]:
            return code_dir(Path(archive.read(STAND_IN).decode()))
        entries = [i for i in archive.infolist() if not i.is_dir()]
        files = sorted((i.filename, i.file_size, i.CRC) for i in entries)
        digest = hashlib.sha256(repr(files).encode()).hexdigest()
        return _code_dir(digest, lambda: {i.filename: archive.read(i) for i in entries})


def code_dir(path: Path) -> Path:
    """What Lambda's /var/task holds for a CodeUri: a directory as it is; a .zip file (what
    ``sam package`` uploads) unpacked; another file alone, as ``sam package`` zips it."""
    return path if path.is_dir() else unpacked(path.read_bytes(), path.name)


def _code_dir(digest: str, files: Callable[[], dict[str, bytes]]) -> Path:
    """A directory of ``files`` (read only when it is not there yet), one per content (the
    archive's ``digest``), so that a deploy finds the last one's."""
    where = Path(tempfile.gettempdir()) / "localcloud-code" / digest[:16]
    if not where.is_dir():
        where.parent.mkdir(parents=True, exist_ok=True)
        # a directory of this maker's own (threads of one process make the same code at once)
        partial = Path(tempfile.mkdtemp(prefix=f"{where.name}.", dir=where.parent))
        for name, content in files().items():
            target = (partial / name).resolve()
            if not target.is_relative_to(partial.resolve()):
                shutil.rmtree(partial)
                raise ValueError(f"code archive entry {name!r} is outside its directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            partial.rename(where)
        except OSError:  # another maker's is there
            shutil.rmtree(partial, ignore_errors=True)
    return where
