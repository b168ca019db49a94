"""A directory made truly read-only for a subprocess, the way a snapshot on a read-only mount is.

``chmod`` does not stop root, so two ways, picked by who runs the tests:

* root: the subprocess runs in a mount namespace of its own where the directory is bound onto
  itself read-only (``unshare -rm``, then ``mount --bind`` and ``mount -o remount,bind,ro``):
  every write fails with EROFS, exactly as on a read-only volume. Nothing outside that one
  subprocess sees the change.
* any other user: the directory tree loses its write permission bits (``chmod -R a-w``) for the
  duration of the block, and gets the owner's back afterwards.

``read_only_runner(directory)`` yields a function that turns an argv into the argv that runs it
with ``directory`` read-only; it skips the test, saying why, when neither way works here (no
``unshare``, no user namespaces, a user whom permissions do not stop).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest

Wrap = Callable[[Sequence[str]], list[str]]

_BIND_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def _in_read_only_mount(directory: Path, argv: Sequence[str]) -> list[str]:
    return ["unshare", "-rm", "sh", "-c", _BIND_READ_ONLY, str(directory), *argv]


@cache
def _mount_unavailable() -> str | None:
    """Why a read-only bind mount cannot be made here (None when it can): tried on a scratch dir,
    where a write must then fail."""
    if shutil.which("unshare") is None:
        return "running as root, and `unshare` (util-linux) is not installed: chmod does not stop root"
    scratch = Path(tempfile.mkdtemp(prefix="paperbot-ro-probe-"))
    try:
        probe = _in_read_only_mount(scratch, ["sh", "-c", 'touch "$0/written" 2>/dev/null; echo done', str(scratch)])
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        if done.returncode != 0 or "done" not in done.stdout:
            return (f"running as root, and `unshare -rm` cannot make a read-only bind mount here "
                    f"(exit {done.returncode}: {done.stderr.strip()[:200]}): chmod does not stop root")
        if (scratch / "written").exists():
            return "running as root, and the read-only bind mount made by `unshare -rm` still let a file be written"
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _set_tree_writable(directory: Path, writable: bool) -> None:
    for path in (directory, *directory.rglob("*")):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        os.chmod(path, mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@contextmanager
def read_only_runner(directory: Path) -> Iterator[Wrap]:
    """Within the block, ``wrap(argv)`` is the argv that runs ``argv`` with ``directory`` read-only
    (see the module docstring); skips the test when that cannot be done here."""
    if os.geteuid() == 0:
        reason = _mount_unavailable()
        if reason is not None:
            pytest.skip(reason)
        yield lambda argv: _in_read_only_mount(directory, argv)
        return
    _set_tree_writable(directory, False)
    try:
        if os.access(directory, os.W_OK):
            pytest.skip(f"removing the write permission of {directory} does not stop this user (uid {os.getuid()})")
        yield list
    finally:
        _set_tree_writable(directory, True)


def tree_state(directory: Path) -> dict[str, tuple[int, int]]:
    """``relative path -> (mtime in ns, size)`` of everything under ``directory`` (itself as ".").

    Two equal states mean nothing was created, removed or written there.
    """
    state = {}
    for path in (directory, *directory.rglob("*")):
        info = path.lstat()
        state[str(path.relative_to(directory))] = (info.st_mtime_ns, info.st_size)
    return state
