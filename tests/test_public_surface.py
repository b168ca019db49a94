"""The public surface ``retrieval.__all__`` (as httpx's tests/test_exported_members.py guards its own).

The surface is the facade, the settings, every error and every result type (and the one
function a door calls before importing the facade, ``start_encoding_process``, and the job
service that has the facade's slow work done by workers, ``JobService``); each name
resolves to the object of the module it lives in, and importing ``retrieval`` stays free
(the names load on first use).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import retrieval
from retrieval import errors, results
from retrieval.assistant import Assistant
from retrieval.config import Settings, load_settings
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[1]


def _defined_in(module: ModuleType) -> set[str]:
    """Public classes defined in ``module`` itself (not imported into it)."""
    return {name for name, value in vars(module).items()
            if inspect.isclass(value) and value.__module__ == module.__name__ and not name.startswith("_")}


def _result_modules() -> list[ModuleType]:
    """The modules of the ``retrieval.results`` package (one per concern)."""
    return [importlib.import_module(f"{results.__name__}.{info.name}") for info in pkgutil.iter_modules(results.__path__)]


def test_every_error_and_result_type_is_exported() -> None:
    result_types = {name for module in _result_modules() for name in _defined_in(module)}
    assert {"AnswerResult", "IngestReport", "Scholar", "IndexStats", "SkippedItem"} <= result_types
    expected = {"Assistant", "JobService", "Settings", "load_settings", "start_encoding_process", "FILE_FORMATS", *_defined_in(errors),
                *result_types}
    aliases = {"AnswerEvent", "AnswerKind", "AnswerMode", "FollowKind"}  # type aliases of retrieval.results
    assert set(retrieval.__all__) == expected | aliases
    assert len(retrieval.__all__) == len(set(retrieval.__all__))


def test_the_results_package_re_exports_every_type_of_its_modules() -> None:
    """``from retrieval.results import X`` is the one way to name a result type, whichever module defines it."""
    for module in _result_modules():
        for name in _defined_in(module):
            assert getattr(results, name) is getattr(module, name), name
            assert name in results.__all__, name


def test_the_declared_homes_agree_with_all() -> None:
    homes = retrieval._SURFACE
    assert sorted(name for names in homes.values() for name in names) == sorted(retrieval.__all__)
    assert set(homes) == {"retrieval.assistant", "retrieval.config", "retrieval.errors", "retrieval.results",
                          "retrieval.index.encoders.worker_process", "retrieval.sources.files.formats",
                          "retrieval.jobs.service"}


def test_each_name_is_the_object_of_its_module() -> None:
    assert retrieval.Assistant is Assistant
    assert retrieval.Settings is Settings and retrieval.load_settings is load_settings
    for module, names in retrieval._SURFACE.items():
        home = sys.modules.get(module) or __import__(module, fromlist=["_"])
        for name in names:
            assert getattr(retrieval, name) is getattr(home, name), name
    assert set(retrieval.__all__) <= set(dir(retrieval))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        retrieval.PaperIndex  # noqa: B018 - internal: not on the surface
    except AttributeError as exc:
        assert "PaperIndex" in str(exc)
    else:  # pragma: no cover - the assertion below names the failure
        raise AssertionError("retrieval.PaperIndex should not resolve")


def test_importing_retrieval_loads_nothing() -> None:
    """A fresh interpreter: ``import retrieval`` (what every ``retrieval.x`` import runs first)
    imports no submodule and no third-party library; the first use of a name imports its module."""
    script = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import retrieval\n"
        "after_import = sorted(set(sys.modules) - before)\n"
        "retrieval.InputError\n"
        "after_use = sorted(set(sys.modules) - before)\n"
        "print(json.dumps([after_import, after_use]))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=patience(120),
                         check=True)
    after_import, after_use = json.loads(run.stdout)
    ours_or_third_party = [name for name in after_import if name.split(".")[0] not in sys.stdlib_module_names]
    assert ours_or_third_party == ["retrieval"]
    assert "retrieval.errors" in after_use and "pydantic" not in after_use
