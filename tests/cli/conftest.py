"""Run the real `paperbot` console script as a subprocess against an isolated data dir."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.common import clean_env

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
        timeout=timeout,
        cwd=cwd or data_dir.parent,
        env=clean_env(data_dir, **env),
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


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
    data_dir = tmp_path_factory.mktemp("pb") / "data"
    run = paperbot("ingest", str(small_corpus), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    return data_dir
