"""The installation's health and its repair (``Assistant.upkeep``): what ``paperbot doctor``,
``paperbot db upgrade`` and the HTTP door's ``/readyz`` call.

``repair`` is the one write here to the records and vectors, and holds the data dir's writer lock
(``Installation.writing("repair")``); ``upgrade_database`` migrates under the database's own
lock (``retrieval.storage.migrate``). The rest read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from retrieval.answers.chat_model import FromSettings
from retrieval.assistant.installation import Installation
from retrieval.errors import PaperbotError
from retrieval.results import ChromaServerStatus, ClusterStatus, ModelProbe, Readiness, ReplicaSeen

if TYPE_CHECKING:
    from retrieval.index.maintenance import ConsistencyReport
    from retrieval.storage.database import SchemaStatus


_RECENT_SECONDS = 24 * 3600  # replicas silent longer are counted, not listed, by ``cluster_status``


class Upkeep:
    """Checks of the database, the index and the model, and the repair of the index."""

    def __init__(self, installation: Installation) -> None:
        self._installation = installation

    def database_status(self) -> SchemaStatus:
        """The database's backend, place and schema revision, read without changing anything (``paperbot doctor``)."""
        from retrieval.storage.database import schema_status

        return schema_status(self._installation.settings)

    def upgrade_database(self, notice: Callable[[str], None] | None = None) -> tuple[SchemaStatus, SchemaStatus]:
        """Bring the database to this code's schema now (``paperbot db upgrade``); before and after."""
        from retrieval.storage.migrate import upgrade_database

        return upgrade_database(self._installation.settings, notice=notice)

    def readiness(self) -> Readiness:
        """Whether this process can answer now (the HTTP door's ``/readyz``): the vector index
        answers, and the database does (its schema revision read; one behind this code's is
        upgraded on next use). Cheap (one count of the vectors, one schema read); every failure
        is a check's message, never an exception."""
        checks: dict[str, str] = {}
        try:  # first: opening the index creates (or upgrades) the database's schema on first use
            checks["vector_index"] = f"ok: {self._installation.index.dense.count():,} vectors"
        except PaperbotError as error:
            checks["vector_index"] = str(error)
        try:  # a schema behind this code's is upgraded on next use (under the database's lock): still ready
            checks["database"] = "ok: " + self.database_status().describe().splitlines()[0].removeprefix("Database: ")
        except PaperbotError as error:
            checks["database"] = str(error)
        return Readiness(ready=all(value.startswith("ok: ") for value in checks.values()), checks=checks)

    def cluster_status(self, *, now: float | None = None) -> ClusterStatus | None:
        """The replicas heart-beating in the database (``cluster_members``, heard from within a day;
        ``alive`` by the rule of ``MISSED_BEATS`` heartbeats of ``PAPERBOT_CLUSTER_HEARTBEAT_SECONDS``)
        and the Chroma server of ``PAPERBOT_CHROMA_URL`` (reached with one count of the collection;
        unreachable: the error's message and hint, never an exception). None when there is neither
        (one machine, nothing serving): ``paperbot doctor`` then says nothing of a cluster.
        Raises ``StorageError`` when the database cannot be read."""
        import time

        from retrieval.storage.database import open_database
        from retrieval.storage.members import MISSED_BEATS, ClusterMembers

        settings = self._installation.settings
        now = time.time() if now is None else now
        every = settings.cluster_heartbeat_seconds
        rows = ClusterMembers(open_database(settings)).seen()
        recent = [row for row in rows if now - row.last_seen <= _RECENT_SECONDS]
        replicas = [ReplicaSeen(id=row.id, role=row.role, host=row.host, pid=row.pid, started_at=row.started_at,
                                seconds_since_heartbeat=max(0.0, now - row.last_seen),
                                alive=now - row.last_seen <= every * MISSED_BEATS) for row in recent]
        chroma = None
        if settings.chroma_url:
            try:
                count = self._installation.index.dense.count()
                chroma = ChromaServerStatus(url=settings.chroma_url, collection=settings.collection, reachable=True,
                                            vectors=count)
            except PaperbotError as error:
                chroma = ChromaServerStatus(url=settings.chroma_url, collection=settings.collection, reachable=False,
                                            error=str(error))
        if not rows and chroma is None:
            return None
        return ClusterStatus(heartbeat_seconds=every, replicas=replicas, older=len(rows) - len(recent), chroma=chroma)

    def check_consistency(self) -> ConsistencyReport:
        """Whether the record store, the vectors and BM25 agree (``paperbot doctor``)."""
        return self._installation.index.check_consistency()

    def probe_model(self) -> ModelProbe:
        """How fast the chat model answers and whether the settings fit it (``paperbot doctor``;
        ``retrieval.answers.model_probe``): the model given, or a probe-sized one built from the
        settings; not configured when there is none."""
        from retrieval.answers import model_probe  # the LLM stack only when a model is measured

        choice = self._installation.chat_model_choice
        if choice is None:
            return ModelProbe(configured=False)
        given = None if isinstance(choice, FromSettings) else choice
        return model_probe.probe_model(self._installation.settings, given)

    def repair(self, *, progress: Callable[[int, int], None] | None = None,
               force: bool = False) -> ConsistencyReport:
        """Make the record store, the vectors and BM25 agree again (``PaperIndex.repair``; ``force``
        drops vectors even when the record store looks lost)."""
        with self._installation.writing("repair"):
            return self._installation.index.repair(progress=progress, force=force)
