"""Other libraries are used through their public names (issue #33): guarded by parsing every module
of ``retrieval/`` and ``bot/``.

A library's private name is one that starts with an underscore (dunders aside), or a module a
library keeps for itself without saying so in its name (``INTERNAL_MODULES``). Found here:

* an import from a private module (``from uvicorn.protocols._x import y``, ``import a._b``) or of a
  private name (``from argparse import _SubParsersAction``);
* an attribute chain that starts at an imported library and reaches a private name
  (``argparse._SubParsersAction``, ``chromadb.api._x``);
* ``getattr``/``setattr``/``hasattr``/``delattr`` of a private name given as a string on anything
  but ``self`` or ``cls`` (how ``client._server._session`` was once reached);
* in a class with a library's base class, a private name of that base used or overridden:
  ``super()._generate(...)``, ``self._stream``, ``def _agenerate`` (the bases are imported to
  know which names are theirs).

A library that cannot be used without one of these gets one adapter module, named in
``ADAPTERS`` with the reason, and a test of its own that fails on the next incompatible
release; nothing else may. ``DOCUMENTED`` names the few underscore names that libraries
document as public (``os._exit``).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"retrieval", "bot", "prompts", "tests", "bench", "scripts"}

# adapter module -> (the library whose private names it may use, why, the test that pins it)
ADAPTERS: dict[str, tuple[str, str, str]] = {
    "retrieval/index/chromadb_adapter.py": (
        "chromadb",
        "chromadb 1.5.9 offers no request timeout for its HTTP client and no way to drop the system "
        "of a PersistentClient whose start failed",
        "tests/index/test_chromadb_adapter.py",
    ),
    "bot/slack/uvicorn_adapter.py": (
        "uvicorn",
        "uvicorn has no deadline for a request's line and headers: its h11 protocol is extended",
        "tests/slack/test_uvicorn_adapter.py",
    ),
}
# Underscore names their library documents as public API.
DOCUMENTED = {"os._exit", "sys._getframe", "_replace", "_asdict", "_fields", "_make"}
# Modules a library keeps for itself although no part of their name says so.
# Our modules that hand out a library's module object (imported their own way): a name imported
# from them is that library, for every check below.
LIBRARY_HOLDERS = {"retrieval.index.bm25_library": {"bm25s": "bm25s"}}
INTERNAL_MODULES = ("slack_bolt.request.internals", "uvicorn.protocols", "chromadb.api.shared_system_client")
ACCESSORS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _internal_module(module: str) -> bool:
    return (any(_private(part) for part in module.split(".")) and module != "__future__") or any(
        module == internal or module.startswith(internal + ".") for internal in INTERNAL_MODULES)


@dataclass(frozen=True)
class Bound:
    """A name a module binds by importing: the library's module path and, for ``from m import n``, ``n``."""

    module: str
    attribute: str | None = None

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.attribute}" if self.attribute else self.module

    def resolve(self) -> object:
        module = importlib.import_module(self.module)
        return getattr(module, self.attribute) if self.attribute else module


def _library_bindings(tree: ast.Module) -> dict[str, Bound]:
    """Every name bound by an import of another library (the standard library included)."""
    bound: dict[str, Bound] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    continue
                if alias.asname:
                    bound[alias.asname] = Bound(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = Bound(top)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            held = LIBRARY_HOLDERS.get(node.module, {})
            for alias in node.names:
                if alias.name in held:
                    bound[alias.asname or alias.name] = Bound(held[alias.name])
            if node.module.split(".")[0] in OURS or node.module == "__future__":
                continue
            for alias in node.names:
                bound[alias.asname or alias.name] = Bound(node.module, alias.name)
    return bound


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); None when the chain does not start at a plain name."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    return (node.id, attributes) if isinstance(node, ast.Name) else None


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _library_bases(cls: ast.ClassDef, bound: dict[str, Bound]) -> Iterator[tuple[str, type]]:
    for base in cls.bases:
        chain = _chain(base)
        if chain is None or chain[0] not in bound:
            continue
        try:
            target: object = bound[chain[0]].resolve()
        except ImportError:  # an optional library not installed here: its names cannot be known
            continue
        for attribute in chain[1]:
            target = getattr(target, attribute)
        if isinstance(target, type):
            yield ast.unparse(base), target


def _names_used_on_self(cls: ast.ClassDef) -> Iterator[tuple[int, str, str]]:
    """(line, name, how) for ``self._x``, ``cls._x``, ``super()._x`` and ``def _x`` in ``cls``."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if _is_super_call(node.value):
                yield node.lineno, node.attr, "calls super()." + node.attr
            elif isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}:
                yield node.lineno, node.attr, f"uses {node.value.id}.{node.attr}"
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(statement.name):
            yield statement.lineno, statement.name, "overrides " + statement.name


def violations(source: str, where: str = "<source>") -> list[str]:
    """Every use of another library's private name in ``source`` (module docstring)."""
    tree = ast.parse(source)
    _annotate_parents(tree)  # a chain is reported once, at its outermost attribute
    bound = _library_bindings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{line} imports {alias.name}" for alias in node.names
                      if alias.name.split(".")[0] not in OURS and _internal_module(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in OURS:
                continue
            if _internal_module(node.module):
                found.append(f"{line} imports from {node.module}")
            found += [f"{line} imports {node.module}.{alias.name}" for alias in node.names
                      if _private(alias.name) and alias.name not in DOCUMENTED]
        elif isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain is None or chain[0] not in bound or isinstance(getattr(node, "parent", None), ast.Attribute):
                continue
            dotted = f"{bound[chain[0]].dotted}.{'.'.join(chain[1])}"
            private = [name for name in chain[1] if _private(name)]
            if private and dotted not in DOCUMENTED and not set(private) <= DOCUMENTED:
                found.append(f"{line} uses {dotted}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value)
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id in {"self", "cls"})):
            found.append(f"{line} {node.func.id}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.ClassDef):
            bases = list(_library_bases(node, bound))
            for lineno, name, how in _names_used_on_self(node):
                owners = [label for label, base in bases if hasattr(base, name) and name not in DOCUMENTED]
                if owners:
                    found.append(f"{where}:{lineno} {node.name} {how}, a private name of {owners[0]}")
    return found


def _annotate_parents(tree: ast.AST) -> None:
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent  # type: ignore[attr-defined]


def _modules() -> list[Path]:
    return sorted([*(ROOT / "retrieval").rglob("*.py"), *(ROOT / "bot").rglob("*.py")])


def _violations_of(path: Path) -> list[str]:
    return violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def test_no_module_uses_another_librarys_private_names() -> None:
    found = [problem for path in _modules() if str(path.relative_to(ROOT)) not in ADAPTERS
             for problem in _violations_of(path)]
    assert found == [], "use the library's public API, or its adapter module (ADAPTERS):\n" + "\n".join(found)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_each_adapter_is_of_its_library_and_pinned(adapter: str) -> None:
    library, why, pinned_by = ADAPTERS[adapter]
    source = (ROOT / adapter).read_text(encoding="utf-8")
    assert why and (ROOT / pinned_by).exists(), adapter
    assert library in {bound.module.split(".")[0] for bound in _library_bindings(ast.parse(source)).values()}
    assert _violations_of(ROOT / adapter), f"{adapter} uses no private name of {library} any more: drop it from ADAPTERS"
    assert Path(adapter).stem in (ROOT / pinned_by).read_text(encoding="utf-8")


# What a bm25s.BM25 keeps on public-looking attributes that bm25s sets itself (``BM25.index``,
# ``BM25.load``): only its adapter reads or sets them.
BM25_STATE = {"scores", "vocab_dict", "unique_token_ids_set", "nonoccurrence_array", "k1", "b", "method",
              "idf_method"}
BM25_ADAPTER = "retrieval/index/bm25s_adapter.py"


def test_only_the_bm25s_adapter_touches_a_retrievers_attributes() -> None:
    users = [path for path in _modules()
             if "bm25s" in {bound.module.split(".")[0] for bound in _library_bindings(ast.parse(path.read_text())).values()}]
    assert {str(path.relative_to(ROOT)) for path in users} >= {BM25_ADAPTER, "retrieval/index/lexical.py"}
    found = [f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}" for path in users
             if str(path.relative_to(ROOT)) != BM25_ADAPTER
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr in BM25_STATE]
    assert found == [], "read or set a bm25s.BM25's state through retrieval/index/bm25s_adapter.py:\n" + "\n".join(found)


@pytest.mark.parametrize(("source", "expected"), [
    ("import argparse\ndef f(s: argparse._SubParsersAction) -> None: ...", "uses argparse._SubParsersAction"),
    ("import chromadb\nx = chromadb.api._private.thing", "uses chromadb.api._private.thing"),
    ("from chromadb.api import shared_system_client as s\ns._identifier_to_system", "_identifier_to_system"),
    ("from uvicorn.protocols.http.h11_impl import H11Protocol", "imports from uvicorn.protocols.http.h11_impl"),
    ("from slack_bolt.request.internals import build_context", "imports from slack_bolt.request.internals"),
    ("import bm25s._internal", "imports bm25s._internal"),
    ("from argparse import _SubParsersAction", "imports argparse._SubParsersAction"),
    ("def f(client):\n    return getattr(client, '_server', None)", "getattr(..., '_server')"),
    ("from langchain_openai import ChatOpenAI\nclass M(ChatOpenAI):\n"
     "    def _generate(self, *a, **k):\n        return super()._generate(*a, **k)\n", "calls super()._generate"),
    ("from langchain_openai import ChatOpenAI\nclass M(ChatOpenAI):\n"
     "    async def _astream(self, *a, **k):\n        yield 1\n", "overrides _astream"),
    ("import langchain_openai\nclass M(langchain_openai.ChatOpenAI):\n"
     "    def go(self):\n        return self._stream([])\n", "uses self._stream"),
])
def test_the_rule_finds_each_kind_of_use(source: str, expected: str) -> None:
    found = violations(source)
    assert any(expected in problem for problem in found), found


@pytest.mark.parametrize("source", [
    "import os\nos._exit(0)",
    "from collections import namedtuple\nP = namedtuple('P', 'a')\nP(1)._replace(a=2)",
    "class Mine:\n    def _own(self):\n        return self._value",
    "from pydantic import BaseModel\nclass M(BaseModel):\n    def _mine(self) -> int:\n        return 1",
    "def f(self):\n    return getattr(self, '_cache', None)",
    "from retrieval.index import lexical\nlexical._BM25_PARAMETERS",
])
def test_the_rule_leaves_public_and_own_names_alone(source: str) -> None:
    assert violations(source) == []


def test_the_rule_sees_the_modules() -> None:
    modules = _modules()
    assert any(path.name == "dense.py" for path in modules) and len(modules) > 100
