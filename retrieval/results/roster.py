"""The roster and follows: scholars followed, follows, their alerts.

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, field_validator

from retrieval.records.paper import (
    Paper,
    clean_text,
    normalize_openalex_id,
    normalize_orcid,
    unique_clean,
)
from retrieval.text import fold

if TYPE_CHECKING:
    pass


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Scholar(BaseModel):
    """One rostered person and how to find their works in each source."""

    name: str
    orcid: str | None = None
    openalex_id: str | None = None
    arxiv_name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    added_at: str = Field(default_factory=_now)
    last_synced: dict[str, str] = Field(default_factory=dict)  # source -> ISO time of the last complete fetch

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        name = clean_text(value)
        if not name:
            raise ValueError("the scholar's name is empty")
        return name

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        return unique_clean(value)

    @property
    def names(self) -> list[str]:
        """Every name this scholar is known by: name, arXiv name, aliases."""
        found = [self.name]
        for extra in [self.arxiv_name, *self.aliases]:
            if extra and extra not in found:
                found.append(extra)
        return found

    def matches(self, query: str) -> bool:
        """True for any of the scholar's names (case/accents ignored), their ORCID or OpenAlex id."""
        text = query.strip()
        orcid = normalize_orcid(text)
        if orcid and orcid == self.orcid:
            return True
        openalex = normalize_openalex_id(text)
        if openalex and openalex == self.openalex_id:
            return True
        wanted = fold(text)
        return bool(wanted) and any(fold(name) == wanted for name in self.names)


FollowKind = Literal["scholar", "topic"]


class Follow(BaseModel):
    """One follow of one channel."""

    id: int
    channel: str
    kind: FollowKind
    query: str
    created_by: str | None = None
    created_at: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.query}"


class FollowAlert(BaseModel):
    """New papers one follow has not announced yet.

    ``posted_before``: papers of the same queue that match the follow and were announced already,
    in queue order: the first messages of this alert, when a pass posted those and then failed
    (the rest is then numbered on from them)."""

    follow: Follow
    papers: list[Paper]
    posted_before: list[Paper] = Field(default_factory=list)


@dataclass(frozen=True)
class AlertClaim:
    """``AlertClaims.claim``: the papers of one follow's alert this replica is to post now, and
    those another replica is posting (its claim still holds)."""

    paper_ids: list[str]
    held: list[str]


@dataclass(frozen=True)
class FollowAdded:
    """``Assistant.follows.follow``: the follow, whether it is new, and whether its kind was guessed."""

    follow: Follow
    created: bool
    guessed: bool  # the text did not say scholar or topic: ``alerts.follows.guess_kind`` chose


@dataclass
class PendingAlerts:
    """New papers queued by syncs, and per follow those it matches and has not announced."""

    paper_ids: list[str]
    alerts: list[FollowAlert]
