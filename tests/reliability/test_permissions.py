"""The data dir is private to its owner: 0700, and every file paperbot creates in it 0600.

On a shared machine the index, the roster, the Slack state and the logs must not be readable by
the other users. Checked from outside on the real ``paperbot`` command, run with the common
umask 022 (which alone would give 0755 directories and 0644 files):

* an ingest and a ``doctor --repair`` into a data dir that already exists with mode 0755:
  the dir is tightened to 0700 with a one-line notice (once), and every regular file under it
  (record store with its -wal/-shm, Chroma, BM25, embedding cache, writer lock) is 0600;
* a data dir paperbot creates itself (``scholars add`` on a new installation) is 0700 with 0600
  files, while the missing parents above it keep the user's umask (they are not ours);
* pictures written on request outside the data dir keep the user's umask too.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest

from bench.common import clean_env
from tests.reliability.helpers import PAPERBOT, ROOT, Run, link_model_cache
from tests.support.patience import patience

USER_UMASK = 0o022


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _with_user_umask() -> None:
    os.umask(USER_UMASK)


def _paperbot(*args: str, data_dir: Path) -> Run:
    """``paperbot ARGS`` as a subprocess with umask 022, whatever this process's umask is."""
    done = subprocess.run([str(PAPERBOT), *args], cwd=data_dir.parent.parent, env=clean_env(data_dir),
                          capture_output=True, text=True, timeout=patience(300), preexec_fn=_with_user_umask)
    return Run(done.returncode, done.stdout, done.stderr)


def _modes_under(data_dir: Path) -> dict[str, int]:
    """``relative path -> mode`` of every regular file under the data dir (links not followed)."""
    found = {}
    for folder, _, files in os.walk(data_dir):  # os.walk does not enter linked directories
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                found[str(path.relative_to(data_dir))] = _mode(path)
    return found


def _sample(path: Path, count: int) -> Path:
    source = Path(str(resources.files("retrieval.sample") / "arxiv_sample.jsonl"))
    path.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:count]), encoding="utf-8")
    return path


@pytest.mark.slow
def test_ingest_and_repair_keep_a_0755_data_dir_private(tmp_path: Path, model_cache: Path) -> None:
    data_dir = link_model_cache(tmp_path / "home" / "data", model_cache)
    os.chmod(data_dir, 0o755)
    records = _sample(tmp_path / "sample.jsonl", 30)

    run = _paperbot("ingest", str(records), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    tightened = [line for line in run.stderr.splitlines() if "private" in line]
    assert tightened == [f"Made the data dir {data_dir} private (mode 0755 -> 0700): other users could read "
                         "its index, logs and Slack state."], run.stderr
    repair = _paperbot("doctor", "--repair", "--json", data_dir=data_dir)
    assert repair.code == 0, repair.stderr
    assert "private" not in repair.stderr  # said once, when it was changed

    assert _mode(data_dir) == 0o700
    modes = _modes_under(data_dir)
    for expected in ("records.sqlite3", "writer.lock", "chroma/chroma.sqlite3", "lexical/manifest.json",
                     "cache/embeddings.sqlite3"):
        assert expected in modes, sorted(modes)
    assert any(name.startswith("chroma/") and name != "chroma/chroma.sqlite3" for name in modes), sorted(modes)
    loose = {name: oct(mode) for name, mode in modes.items() if mode != 0o600}
    assert not loose
    made_here = [Path(folder) for folder, _, _ in os.walk(data_dir) if Path(folder) not in (data_dir, data_dir / "cache")]
    assert made_here and all(_mode(folder) == 0o700 for folder in made_here)


def test_a_new_data_dir_is_private_and_its_parents_are_the_users(tmp_path: Path) -> None:
    data_dir = tmp_path / "home" / "new-parent" / "data"
    (tmp_path / "home").mkdir()
    run = _paperbot("scholars", "add", "Zhao Zhang", "--orcid", "0000-0002-1825-0097", data_dir=data_dir)
    assert run.code == 0, run.stderr
    assert "private" not in run.stderr  # created private: nothing to tighten, nothing to say
    assert _mode(data_dir) == 0o700
    assert _mode(data_dir.parent) == 0o777 & ~USER_UMASK
    modes = _modes_under(data_dir)
    assert "records.sqlite3" in modes and not {name: oct(mode) for name, mode in modes.items() if mode != 0o600}


PICTURES = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from unittest import mock
    from retrieval.assistant import Assistant
    from retrieval.config import load_settings

    def render(summary, out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "timeline.png").write_bytes(b"png")
        return [out_dir / "timeline.png"]

    assistant = Assistant(load_settings())
    with mock.patch("retrieval.scholars.plots.render_plots", render):
        for target in sys.argv[1:]:
            assistant.scholars.render_plots(None, Path(target))
    """
)


def test_pictures_written_outside_the_data_dir_keep_the_users_umask(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    outside, inside = tmp_path / "plots" / "zhang", data_dir / "plots"
    subprocess.run([sys.executable, "-c", PICTURES, str(outside), str(inside)], cwd=ROOT, env=clean_env(data_dir),
                   check=True, timeout=patience(120), preexec_fn=_with_user_umask)
    assert (_mode(outside.parent), _mode(outside), _mode(outside / "timeline.png")) == (0o755, 0o755, 0o644)
    assert (_mode(data_dir), _mode(inside), _mode(inside / "timeline.png")) == (0o700, 0o700, 0o600)
