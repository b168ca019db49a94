"""Run the real `paperbot` console script as a subprocess against an isolated data dir.

Data dirs whose commands load the encoder are made with ``link_model_cache`` (the session's
encoder cache, ``tests/support/model_cache.py``): the subprocess then loads the encoder instead
of exporting and probing it again (tens of seconds per data dir). Commands that never load it
(bad input, files that read as nothing) run on plain data dirs and stay fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from bench.common import clean_env
from tests.support.model_cache import link_model_cache
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
PAPERBOT = Path(sys.executable).with_name("paperbot")
SAMPLE = ROOT / "retrieval" / "sample" / "arxiv_sample.jsonl"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


def paperbot(*args: str, data_dir: Path, cwd: Path | None = None, timeout: float = 600, **env: str) -> Run:
    proc = subprocess.run(
        [str(PAPERBOT), *args],
        capture_output=True,
        text=True,
        timeout=patience(timeout),
        cwd=cwd or data_dir.parent,
        env=clean_env(data_dir, **env),
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def paperbot_here(*args: str, data_dir: Path, cwd: Path | None = None, **env: str) -> Run:
    """``bot.cli.main(ARGS)`` in this process, seen as ``paperbot`` would be: the environment of
    ``clean_env``, the working directory, stdout, stderr (log records too, in the CLI's format)
    and the exit status (argparse's ``SystemExit`` included).

    The same entry point as the console script without the interpreter start-up, for tests of
    what a command prints rather than of the process itself (those use ``paperbot``).
    """
    from bot.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(stderr)  # what the CLI's logging.basicConfig would add
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    level = root.level
    previous = Path.cwd()
    with mock.patch.dict(os.environ, clean_env(data_dir, **env), clear=True):
        os.chdir(cwd or data_dir.parent)  # no .env file is read from here
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = main(list(args))
                except SystemExit as exc:  # argparse: --help, usage errors
                    code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
            os.chdir(previous)
    return Run(code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> Path:
    """40 real sample records (the 30 newest software-testing papers, 10 older others) as JSONL."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    from_api = [line for line in lines if '"source":"arxiv"' in line]
    testing = sorted(from_api, key=lambda line: json.loads(line).get("published", ""), reverse=True)[:30]
    others = [line for line in lines if '"source":"arxiv"' not in line][:10]
    path = tmp_path_factory.mktemp("corpus") / "small.jsonl"
    path.write_text("\n".join(testing + others) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def indexed(tmp_path_factory, small_corpus) -> Path:
    """A data dir with the small corpus ingested through the CLI."""
    data_dir = link_model_cache(tmp_path_factory.mktemp("pb") / "data")
    run = paperbot("ingest", str(small_corpus), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    return data_dir
