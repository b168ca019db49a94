"""What each command imports: `--help` none of the heavy libraries, an extractive answer no LLM stack.

Nearly all of a CLI call's time is imports (``bench/cli.py``): chromadb, onnxruntime and the
encoder for a query; langchain-core and openai only when a model is configured. Each check runs
in a fresh interpreter, so modules imported by the test session do not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.common import clean_env
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]

# Never needed to print the commands: each costs 0.1-1.5 s of a 0.3x budget (bench/cli.py).
NOT_FOR_HELP = (
    "chromadb", "onnxruntime", "torch", "bm25s", "scipy", "numpy", "langchain_core", "langchain_openai",
    "openai", "slack_bolt", "slack_sdk", "matplotlib", "networkx", "sentence_transformers", "transformers",
    "pydantic", "pydantic_settings", "rich", "httpx", "sqlalchemy", "alembic", "psycopg",
)
LLM_STACK = ("langchain_core", "langchain_openai", "openai")
# The records are read through the database layer (SQLAlchemy; docs/performance.md says what it
# costs), and this process creates the database (Alembic); no PostgreSQL driver for SQLite. bm25s
# is imported without SciPy (retrieval/index/bm25_library.py).
NOT_FOR_ANSWERS = (*LLM_STACK, "matplotlib", "slack_bolt", "slack_sdk", "torch", "sentence_transformers", "transformers",
                   "psycopg", "scipy")


def _python(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=patience(300), cwd=ROOT,
                          env=clean_env(data_dir))


def _imported(importtime_log: str) -> set[str]:
    """Top-level package names from ``python -X importtime`` output."""
    names = set()
    for line in importtime_log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":
                names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("command", [[], ["ingest"], ["remove"], ["collaborators"], ["demo"]],
                         ids=["paperbot", "ingest", "remove", "collaborators", "demo"])
def test_help_imports_no_heavy_library(tmp_path: Path, command: list[str]) -> None:
    run = _python("-X", "importtime", "-m", "bot.cli", *command, "--help", data_dir=tmp_path / "data")
    assert run.returncode == 0, run.stderr
    assert ("ask" in run.stdout and "summarize" in run.stdout) if not command else f"paperbot {command[0]}" in run.stdout
    if command == ["ingest"]:  # the formats are listed without importing their parsers
        assert "bibtex" in run.stdout and "crossref" in run.stdout
    imported = _imported(run.stderr)
    assert "bot" in imported  # the log was read
    assert sorted(imported & set(NOT_FOR_HELP)) == []


def test_usage_error_imports_no_heavy_library(tmp_path: Path) -> None:
    run = _python("-X", "importtime", "-m", "bot.cli", "ask", data_dir=tmp_path / "data")
    assert run.returncode == 2 and "the following arguments are required: question" in run.stderr
    assert sorted(_imported(run.stderr) & set(NOT_FOR_HELP)) == []


# An extractive ask and summarize through the CLI's own handlers, the facade and the answer chain,
# over a small real index whose vectors come from a hash instead of the encoder.
ANSWER_PATH = textwrap.dedent('''
    import hashlib, io, json, sys
    from pathlib import Path

    import numpy as np

    from bot.cli import build_parser
    from bot.context import CliContext
    from retrieval.assistant import Assistant
    from retrieval.config import Settings
    from retrieval.index.paper_index import PaperIndex
    from retrieval.records.paper import Paper

    class HashEncoder:
        name, dimension = "test/hash", 384

        def encode(self, texts):
            rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big"))
                    .standard_normal(self.dimension).astype(np.float32) for t in texts]
            return np.stack([r / np.linalg.norm(r) for r in rows]) if rows else np.zeros((0, self.dimension), np.float32)

    data_dir, sample = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings(_env_file=None, data_dir=data_dir, chroma_url=None, openai_api_key=None, openai_base_url=None)
    assert not settings.llm_configured
    papers = [Paper.model_validate_json(line) for line in sample.read_text(encoding="utf-8").splitlines()[:25]]
    index = PaperIndex.open(settings, encoder=HashEncoder())
    index.upsert(papers)
    author = papers[0].authors[0].name
    modes = {}
    for argv in (["ask", "Which papers generate unit tests?", "--json"], ["summarize", author, "--json"],
                 ["ask", "Which papers generate unit tests?"], ["search", "unit tests"]):
        out = io.StringIO()
        ctx = CliContext(settings=settings, stdout=out)
        ctx._assistant = Assistant(settings, index=index, notice=ctx.note)  # the chat model: from settings
        args = build_parser().parse_args(argv)
        assert args.handler(args, ctx) == 0
        if "--json" in argv:
            modes[argv[0]] = json.loads(out.getvalue()).get("mode")
    print(json.dumps({"modes": modes, "modules": sorted({name.split(".")[0] for name in sys.modules})}))
''')


def test_extractive_ask_and_summarize_import_no_llm_stack(tmp_path: Path) -> None:
    sample = ROOT / "retrieval" / "sample" / "arxiv_sample.jsonl"
    run = _python("-c", ANSWER_PATH, str(tmp_path / "data"), str(sample), data_dir=tmp_path / "data")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["modes"] == {"ask": "extractive", "summarize": "extractive"}
    assert {"chromadb", "bm25s", "retrieval"} <= set(result["modules"])  # the real path ran
    assert sorted(set(result["modules"]) & set(NOT_FOR_ANSWERS)) == []
