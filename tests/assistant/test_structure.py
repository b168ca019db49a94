"""retrieval/assistant/: ``Assistant`` keeps the top level, each sub-facade is small and made once,
and every write of the sub-facades holds the data dir's writer lock (``Installation.writing``)."""

from __future__ import annotations

import ast
import inspect
import textwrap
import threading
from pathlib import Path

import pytest

import retrieval.assistant as facade
from retrieval.alerts.channels import ChannelFollows
from retrieval.assistant import Assistant
from retrieval.assistant.fetching import Fetching
from retrieval.assistant.library import Library
from retrieval.assistant.records import Records
from retrieval.assistant.roster import ScholarRoster
from retrieval.assistant.scholars import Scholars
from retrieval.assistant.upkeep import Upkeep
from retrieval.config import Settings

PACKAGE = Path(facade.__file__).parent

# What is top level: the questions a person asks, close, the shared settings and index (for the
# core's own callers: the doors never use the index, tests/test_architecture.py), one property per sub-facade.
TOP_LEVEL = {"ask", "stream_ask", "search", "close", "settings", "index"}
SUB_FACADES: dict[str, type] = {"scholars": Scholars, "roster": ScholarRoster, "fetching": Fetching,
                                "library": Library, "records": Records, "upkeep": Upkeep, "follows": ChannelFollows}
MOST_MEMBERS = 8  # public members of one sub-facade: more is a second job
MOST_LINES = 250

# Calls that write records, vectors or BM25 (directly or through the ingest and sync pipelines).
WRITES = {"ingest_papers", "sync_roster", "repair", "delete", "upsert"}


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_the_facade_keeps_only_the_top_level() -> None:
    """A new operation goes to the sub-facade of its job (or a new one), not onto ``Assistant``."""
    assert _public(Assistant) == TOP_LEVEL | set(SUB_FACADES) | {"answering"}


def test_each_sub_facade_module_is_small() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert {path.stem for path in modules} >= {"__init__", "installation", *(name for name in SUB_FACADES if name != "follows")}
    for path in modules:
        assert len(path.read_text(encoding="utf-8").splitlines()) <= MOST_LINES, path.name
    for name, cls in SUB_FACADES.items():
        if cls.__module__.startswith(facade.__name__):  # ``follows`` is the alerts concern's own
            assert 1 < len(_public(cls)) <= MOST_MEMBERS, (name, sorted(_public(cls)))


def _ask_for(core: Assistant, name: str, seen: list[object]) -> None:
    seen.append(getattr(core, name))


def test_each_sub_facade_is_made_once_whichever_thread_asks_first(tmp_path: Path) -> None:
    core = Assistant(Settings(_env_file=None, data_dir=tmp_path, openai_api_key=None), chat_model=None)
    for name, cls in SUB_FACADES.items():
        seen: list[object] = []
        threads = [threading.Thread(target=_ask_for, args=(core, name, seen)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(seen) == 4 and all(part is seen[0] for part in seen), name
        assert isinstance(seen[0], cls) and getattr(core, name) is seen[0]
    core.close()


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _holds_the_writer_lock(node: ast.With) -> bool:
    return any(isinstance(item.context_expr, ast.Call) and _callee(item.context_expr) == "writing" for item in node.items)


def _writes(path: Path) -> list[tuple[str, str, bool]]:
    """(function, write call, whether a ``with ....writing(...)`` around it holds the lock) per write call."""
    found = []

    def visit(node: ast.AST, function: str, locked: bool) -> None:
        if isinstance(node, ast.FunctionDef):
            function, locked = node.name, False
        if isinstance(node, ast.With) and _holds_the_writer_lock(node):
            locked = True
        if isinstance(node, ast.Call) and _callee(node) in WRITES:
            found.append((function, str(_callee(node)), locked))
        for child in ast.iter_child_nodes(node):
            visit(child, function, locked)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>", False)
    return found


@pytest.mark.parametrize("module", ["library", "fetching", "upkeep", "records", "roster", "scholars", "__init__"])
def test_every_write_holds_the_writer_lock(module: str) -> None:
    writes = _writes(PACKAGE / f"{module}.py")
    assert [write for write in writes if not write[2]] == []
    expected = {"library": {("ingest_files", "ingest_papers"), ("ingest_papers", "ingest_papers"),
                            ("ingest_files", "delete"), ("ingest_files", "upsert"),
                            ("note_entries_no_longer_in", "delete"), ("note_entries_no_longer_in", "upsert"),
                            ("remove_sources", "delete"), ("remove_sources", "upsert")},
                "fetching": {("sync", "sync_roster")}, "upkeep": {("repair", "repair")}}
    assert {(function, call) for function, call, _ in writes} == expected.get(module, set())


def test_fetched_records_are_indexed_through_the_librarys_locked_path() -> None:
    """``fetch`` waits on the network without the lock; what arrives goes through ``Library.ingest_papers``."""
    calls = [node for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(Fetching.fetch))))
             if isinstance(node, ast.Call) and _callee(node) == "fetch_and_index"]
    assert len(calls) == 1
    ingest = calls[0].args[2]
    assert isinstance(ingest, ast.Attribute) and ingest.attr == "ingest_papers"
    assert isinstance(ingest.value, ast.Attribute) and ingest.value.attr == "_library"
