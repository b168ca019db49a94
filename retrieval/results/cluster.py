"""What ``paperbot doctor`` reports of a deployment beyond one machine: the replicas of
``paperbot serve`` heart-beating in the database, and the Chroma server (``Assistant.upkeep.cluster_status``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReplicaSeen:
    """One row of ``cluster_members``: a replica's id, role (``slack``), host and pid, when it
    started, how long ago its last heartbeat was, and ``alive``: heard from within 3 heartbeats
    (silent longer, it counts as stopped and other replicas take over its unanswered events)."""

    id: str
    role: str
    host: str
    pid: int
    started_at: str
    seconds_since_heartbeat: float
    alive: bool


@dataclass(frozen=True)
class ChromaServerStatus:
    """The Chroma server of ``PAPERBOT_CHROMA_URL``: ``reachable`` with the collection's vector
    count, or not, with ``error``: the message and what to do next."""

    url: str
    collection: str
    reachable: bool
    vectors: int | None = None
    error: str = ""


@dataclass(frozen=True)
class ClusterStatus:
    """The replicas heard from within a day (``older``: how many rows are older and
    not listed) and the Chroma server (None without ``PAPERBOT_CHROMA_URL``). ``ok`` is False
    only when the Chroma server cannot be used; a stopped replica is reported, not a failure."""

    heartbeat_seconds: float
    replicas: list[ReplicaSeen] = field(default_factory=list)
    older: int = 0
    chroma: ChromaServerStatus | None = None

    @property
    def ok(self) -> bool:
        """Whether every part that must answer does (the Chroma server, when there is one)."""
        return self.chroma is None or self.chroma.reachable

    def describe(self) -> str:
        """Lines for ``paperbot doctor``."""
        lines = []
        if self.chroma is not None:
            chroma = self.chroma
            if chroma.reachable:
                lines.append(f"Chroma server: {chroma.url} reachable; collection {chroma.collection!r}, "
                             f"{chroma.vectors:,} vectors.")
            else:
                lines.append(f"Chroma server: UNREACHABLE at {chroma.url}: {chroma.error}")
        if self.replicas or self.older:
            alive = sum(replica.alive for replica in self.replicas)
            lines.append(f"Replicas: {alive} alive, {len(self.replicas) - alive} stopped "
                         f"(heartbeat every {self.heartbeat_seconds:g} s; silent for 3 = stopped).")
            for replica in self.replicas:
                state = "alive" if replica.alive else "STOPPED (its unanswered events are taken over)"
                lines.append(f"  replica {replica.id} ({replica.role}, {replica.host} pid {replica.pid}, "
                             f"started {replica.started_at}): {state}, last heartbeat "
                             f"{replica.seconds_since_heartbeat:.0f} s ago")
            if self.older:
                lines.append(f"  {self.older} older row(s) of replicas silent for more than a day are not listed.")
        return "\n".join(lines)
