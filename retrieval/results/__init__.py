"""What the core hands to the doors: search hits, cited answers, scholar profiles, experts.

These are the public contracts. ``--json`` output of the CLI is exactly ``model_dump()`` of
the ``*Result`` models here (see the issue contracts); the Slack layer renders the same
objects as Block Kit. Change them only additively.

One module per concern, every name re-exported here (import them from ``retrieval.results``):
``validation`` (what validation and parsing removed), ``answers`` (filters, hits, citations,
answers and their stream events), ``scholars`` (summaries and collaborators), ``ingests``
(ingests, removals, fetches and syncs), ``roster`` (scholars followed, follows, alerts) and
``index_stats``; ``jobs`` (the job queue's state); ``cluster`` (the replicas and the Chroma server); ``readiness`` (what ``/readyz`` reports). The doors import these, ``retrieval.assistant``, ``retrieval.errors`` and
``retrieval.config``, and nothing else of the core (``tests/test_architecture.py``).
"""

from __future__ import annotations

from retrieval.results.answers import (
    AnswerEvent,
    AnswerKind,
    AnswerMode,
    AnswerResult,
    Citation,
    Final,
    Progress,
    SearchFilters,
    SearchHit,
    SearchResult,
    TextDelta,
)
from retrieval.results.cluster import (
    ChromaServerStatus,
    ClusterStatus,
    ReplicaSeen,
)
from retrieval.results.index_stats import (
    IndexStats,
)
from retrieval.results.ingests import (
    EMPTY_FILE,
    FetchResult,
    FileResult,
    IngestReport,
    KeptAfterRemoval,
    RemovalReport,
    ScholarSync,
    SourceFailure,
    SyncEvent,
    SyncReport,
)
from retrieval.results.jobs import (
    JobProgress,
    QueueStatus,
    WorkerSeen,
)
from retrieval.results.readiness import (
    Readiness,
)
from retrieval.results.roster import (
    AlertClaim,
    Follow,
    FollowAdded,
    FollowAlert,
    FollowKind,
    PendingAlerts,
    Scholar,
)
from retrieval.results.scholars import (
    AmbiguousScholarResult,
    Coauthor,
    CoauthorLink,
    CollaboratorsResult,
    ExpertCandidate,
    ScholarCandidate,
    ScholarIdentity,
    ScholarSummaryResult,
    Theme,
    ThemeYears,
)
from retrieval.results.validation import (
    DroppedSentence,
    ModelProbe,
    SkippedItem,
    ValidationReport,
)

__all__ = [
    "EMPTY_FILE",
    "AlertClaim",
    "AmbiguousScholarResult",
    "AnswerEvent",
    "AnswerKind",
    "AnswerMode",
    "AnswerResult",
    "ChromaServerStatus",
    "Citation",
    "ClusterStatus",
    "Coauthor",
    "CoauthorLink",
    "CollaboratorsResult",
    "DroppedSentence",
    "ExpertCandidate",
    "FetchResult",
    "FileResult",
    "Final",
    "Follow",
    "FollowAdded",
    "FollowAlert",
    "FollowKind",
    "IndexStats",
    "IngestReport",
    "JobProgress",
    "KeptAfterRemoval",
    "ModelProbe",
    "PendingAlerts",
    "Progress",
    "QueueStatus",
    "Readiness",
    "RemovalReport",
    "ReplicaSeen",
    "Scholar",
    "ScholarCandidate",
    "ScholarIdentity",
    "ScholarSummaryResult",
    "ScholarSync",
    "SearchFilters",
    "SearchHit",
    "SearchResult",
    "SkippedItem",
    "SourceFailure",
    "SyncEvent",
    "SyncReport",
    "TextDelta",
    "Theme",
    "ThemeYears",
    "ValidationReport",
    "WorkerSeen",
]
