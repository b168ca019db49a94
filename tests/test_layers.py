"""The tree shows the architecture: the core's concerns, which may import which, and where their tests live.

Layers, lowest first; a module imports only its own concern, lower layers, or a same-layer concern
named in ``SIDEWAYS`` with the reason. Guarded by parsing every module's imports, so a new module
in the wrong place, or an import against the grain, fails here with the edge that broke the rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "retrieval"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "text", "offline", "gc_pause"}),
    frozenset({"config", "records", "results"}),
    frozenset({"sources", "storage", "index"}),
    frozenset({"ingest", "answers", "scholars", "alerts"}),
    frozenset({"assistant"}),
    frozenset({"jobs"}),  # the job queue runs the facade's slow work in worker processes
)
PACKAGES = {"records", "results", "sources", "storage", "index", "ingest", "answers", "scholars", "alerts", "assistant",
            "sample", "jobs"}
MODULES = {"__init__", "config", "errors", "text", "offline", "gc_pause"}

SIDEWAYS: dict[tuple[str, str], str] = {
    ("results", "records"): "result types carry the paper records they cite",
    ("index", "storage"): "the index is built from the record store and writes its files atomically",
    ("scholars", "answers"): "a scholar summary is a cited answer: evidence terms, citation checks, the LLM client",
}


def _rank(concern: str) -> int:
    return next(n for n, layer in enumerate(LAYERS) if concern in layer)


def _concern(module: str) -> str | None:
    parts = module.split(".")
    return (parts[1] if len(parts) > 1 else "__init__") if parts[0] == "retrieval" else None


def _edges() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        source = _concern(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            else:
                continue
            for target in targets:
                concern = _concern(target)
                if concern and source and concern != source:
                    found.append((str(path.relative_to(ROOT)), source, concern))
    return found


def test_the_core_is_grouped_by_concern() -> None:
    packages = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in CORE.glob("*.py")}
    assert packages == PACKAGES, "a concern without a package, or a package without a concern"
    assert modules == MODULES, "flat modules belong in a concern's package"


def test_imports_run_down_the_layers() -> None:
    wrong = []
    for path, source, target in _edges():
        if source == "__init__":
            continue  # the public surface re-exports from anywhere
        up = _rank(target) > _rank(source)
        sideways = _rank(target) == _rank(source) and (source, target) not in SIDEWAYS
        if up or sideways:
            wrong.append(f"{path}: {source} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(set(wrong)))


def test_every_sideways_exception_is_still_used() -> None:
    used = {(source, target) for _, source, target in _edges()}
    assert set(SIDEWAYS) <= used, f"stale exceptions: {set(SIDEWAYS) - used}"


TESTS = ROOT / "tests"
# Test folders that are not a package of the core, each with what it tests.
OTHER_TEST_FOLDERS = {
    "core": "retrieval's modules outside the packages (config, errors, text, gc_pause, offline)",
    "cli": "the command-line door (bot/cli.py, bot/commands/)",
    "slack": "the Slack door (bot/slack/)",
    "prompts": "the prompt templates (prompts/)",
    "bench": "the benchmarks (bench/)",
    "reliability": "whole-product failures: killed processes, full disks, hostile input, permissions",
    "cluster": "several `paperbot serve` replicas sharing one database and one Chroma server",
    "support": "the suite's own helpers (servers, the encoder cache)",
    "fixtures": "recorded responses and files the tests read",
}


def _folders(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"}


def test_the_tests_mirror_the_package() -> None:
    """A module's tests are found by its path: tests/<concern>/ for retrieval/<concern>/ (and a
    sub-package's in the same sub-folder), else one of the named folders."""
    unknown = _folders(TESTS) - PACKAGES - set(OTHER_TEST_FOLDERS)
    assert not unknown, f"test folders that mirror no package of the core: {sorted(unknown)}"
    for concern in _folders(TESTS) & PACKAGES:
        nested = _folders(TESTS / concern) - _folders(CORE / concern)
        assert not nested, f"tests/{concern}/ has folders retrieval/{concern}/ lacks: {sorted(nested)}"
