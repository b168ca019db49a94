"""Replace a file all at once: readers and crashes see the old content or the new, never half.

The new content is written to a temporary file in the target's directory, flushed to disk
(``fsync``), renamed over the target (``os.replace`` is atomic on POSIX and Windows), and then
the directory itself is flushed so the rename survives a power cut. Without the two flushes a
crash can leave the new name pointing at an empty or truncated file. On any failure (disk full,
permissions, an exception in ``write``) the temporary file is removed and the target is
untouched; the ``OSError`` (or the exception) propagates for the caller to turn into a
``StorageError`` naming what it was saving.

    atomic_write_text(path, json.dumps(manifest))
    atomic_write(model_path, lambda tmp: torch.onnx.export(model, args, str(tmp)))
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Persist a rename; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on directories; the rename is still atomic
        pass
    finally:
        os.close(fd)


def atomic_write(target: Path, write: Callable[[Path], object], *, durable: bool = True) -> None:
    """Call ``write(tmp)`` to fill a temporary file next to ``target``, then swap it in.

    ``write`` receives the temporary path (it exists, empty) and may write it any way it likes,
    including through a library that only takes a path. ``durable=False`` skips the flushes for
    caches that are cheap to rebuild.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        if durable:
            _fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_directory(target.parent)


def atomic_write_bytes(target: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``target`` with ``data`` atomically (see ``atomic_write``)."""
    atomic_write(target, lambda tmp: tmp.write_bytes(data), durable=durable)


def atomic_write_text(target: Path, text: str, *, encoding: str = "utf-8", durable: bool = True) -> None:
    """Replace ``target`` with ``text`` atomically (see ``atomic_write``)."""
    atomic_write_bytes(target, text.encode(encoding), durable=durable)
