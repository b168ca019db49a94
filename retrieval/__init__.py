"""paperbot's core, and its public surface: what the doors (the CLI, Slack) and other callers use.

    from retrieval import Assistant, load_settings

    assistant = Assistant(load_settings())
    print(assistant.ask("Which papers generate unit tests?").answer)

``__all__`` is the facade (``Assistant``), the job service that has its slow work done by
``paperbot worker`` processes (``JobService``, ``retrieval.jobs``), the settings, the errors and the result types the
doors render; every other module under ``retrieval`` is internal. Names resolve on first use
(module ``__getattr__``): importing ``retrieval``, which every ``import retrieval.x`` does,
loads nothing, so ``paperbot --help`` imports no third-party library
(``tests/cli/test_import_cost.py``). ``tests/test_public_surface.py`` guards the surface.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time ``__getattr__`` imports
    from retrieval.assistant import Assistant
    from retrieval.config import Settings, load_settings
    from retrieval.errors import (
        BusyError,
        ConfigError,
        DatabaseDamagedError,
        DataDirReadOnlyError,
        DiskFullError,
        IndexDamagedError,
        IndexDiskFullError,
        IndexUnavailableError,
        InputError,
        LLMUnavailableError,
        NotInstalledError,
        PaperbotError,
        ParseError,
        PartlySavedError,
        RepairRefusedError,
        SourceError,
        StoppedFollowingError,
        StorageError,
        UnknownScholarError,
    )
    from retrieval.index.encoders.worker_process import start_encoding_process
    from retrieval.jobs.service import JobService
    from retrieval.results import (
        AlertClaim,
        AmbiguousScholarResult,
        AnswerEvent,
        AnswerKind,
        AnswerMode,
        AnswerResult,
        Citation,
        Coauthor,
        CoauthorLink,
        CollaboratorsResult,
        DroppedSentence,
        ExpertCandidate,
        FetchResult,
        FileResult,
        Final,
        Follow,
        FollowAdded,
        FollowAlert,
        FollowKind,
        IndexStats,
        IngestReport,
        JobProgress,
        KeptAfterRemoval,
        ModelProbe,
        PendingAlerts,
        Progress,
        QueueStatus,
        Readiness,
        RemovalReport,
        Scholar,
        ScholarCandidate,
        ScholarIdentity,
        ScholarSummaryResult,
        ScholarSync,
        SearchFilters,
        SearchHit,
        SearchResult,
        SkippedItem,
        SourceFailure,
        SyncEvent,
        SyncReport,
        TextDelta,
        Theme,
        ThemeYears,
        ValidationReport,
        WorkerSeen,
    )
    from retrieval.sources.files.formats import FILE_FORMATS

_SURFACE: dict[str, tuple[str, ...]] = {
    "retrieval.assistant": ("Assistant",),
    # light (the standard library only): a door calls it before importing the rest
    "retrieval.index.encoders.worker_process": ("start_encoding_process",),
    "retrieval.config": ("Settings", "load_settings"),
    # light (the standard library only): the file formats, listed without importing the parsers
    "retrieval.sources.files.formats": ("FILE_FORMATS",),
    "retrieval.errors": (
        "BusyError", "ConfigError", "DatabaseDamagedError", "DataDirReadOnlyError", "DiskFullError", "IndexDamagedError", "IndexDiskFullError",
        "IndexUnavailableError", "InputError", "LLMUnavailableError", "NotInstalledError", "PaperbotError", "ParseError", "PartlySavedError", "RepairRefusedError",
        "SourceError", "StoppedFollowingError", "StorageError", "UnknownScholarError",
    ),
    "retrieval.results": (
        "AlertClaim", "AmbiguousScholarResult", "AnswerEvent", "AnswerKind", "AnswerMode", "AnswerResult", "ChromaServerStatus",
        "Citation", "ClusterStatus", "Coauthor", "CoauthorLink", "CollaboratorsResult", "DroppedSentence", "ExpertCandidate",
        "FetchResult", "FileResult", "Final", "Follow",
        "FollowAdded", "FollowAlert", "FollowKind", "IndexStats", "IngestReport", "JobProgress", "KeptAfterRemoval", "ModelProbe", "PendingAlerts",
        "Progress", "QueueStatus", "Readiness", "RemovalReport", "ReplicaSeen", "Scholar",
        "ScholarCandidate", "ScholarIdentity", "ScholarSummaryResult", "ScholarSync", "SearchFilters", "SearchHit",
        "SearchResult", "SkippedItem", "SourceFailure", "SyncEvent", "SyncReport", "TextDelta", "Theme", "ThemeYears", "ValidationReport", "WorkerSeen",
    ),
    "retrieval.jobs.service": ("JobService",),
}
_HOME = {name: module for module, names in _SURFACE.items() for name in names}

__all__ = [
    "FILE_FORMATS",
    "AlertClaim",
    "AmbiguousScholarResult",
    "AnswerEvent",
    "AnswerKind",
    "AnswerMode",
    "AnswerResult",
    "Assistant",
    "BusyError",
    "ChromaServerStatus",
    "Citation",
    "ClusterStatus",
    "Coauthor",
    "CoauthorLink",
    "CollaboratorsResult",
    "ConfigError",
    "DataDirReadOnlyError",
    "DatabaseDamagedError",
    "DiskFullError",
    "DroppedSentence",
    "ExpertCandidate",
    "FetchResult",
    "FileResult",
    "Final",
    "Follow",
    "FollowAdded",
    "FollowAlert",
    "FollowKind",
    "IndexDamagedError",
    "IndexDiskFullError",
    "IndexStats",
    "IndexUnavailableError",
    "IngestReport",
    "InputError",
    "JobProgress",
    "JobService",
    "KeptAfterRemoval",
    "LLMUnavailableError",
    "ModelProbe",
    "NotInstalledError",
    "PaperbotError",
    "ParseError",
    "PartlySavedError",
    "PendingAlerts",
    "Progress",
    "QueueStatus",
    "Readiness",
    "RemovalReport",
    "RepairRefusedError",
    "ReplicaSeen",
    "Scholar",
    "ScholarCandidate",
    "ScholarIdentity",
    "ScholarSummaryResult",
    "ScholarSync",
    "SearchFilters",
    "SearchHit",
    "SearchResult",
    "Settings",
    "SkippedItem",
    "SourceError",
    "SourceFailure",
    "StoppedFollowingError",
    "StorageError",
    "SyncEvent",
    "SyncReport",
    "TextDelta",
    "Theme",
    "ThemeYears",
    "UnknownScholarError",
    "ValidationReport",
    "WorkerSeen",
    "load_settings",
    "start_encoding_process",
]  # the names of _SURFACE, sorted (tests/test_public_surface.py)


def __getattr__(name: str) -> Any:
    """``retrieval.Assistant`` and the rest of ``__all__``, imported from their module on first use."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
