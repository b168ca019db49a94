"""Action ids and the typed values our buttons carry.

A button value is at most 2,000 characters and comes back from Slack verbatim, so it only
holds a short reference (the stored answer's id, a page offset, a scholar id); everything
else is looked up in the data dir. Values are parsed strictly: a malformed or forged value
is an ``InputError``, never a crash.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from retrieval.errors import InputError

ACTION_VOTE_UP = "paperbot_vote_up"
ACTION_VOTE_DOWN = "paperbot_vote_down"
ACTION_MORE_PAPERS = "paperbot_more_papers"
ACTION_BIBTEX = "paperbot_bibtex"
ACTION_PICK_SCHOLAR = "paperbot_pick_scholar"

ALL_ACTIONS = (ACTION_VOTE_UP, ACTION_VOTE_DOWN, ACTION_MORE_PAPERS, ACTION_BIBTEX, ACTION_PICK_SCHOLAR)


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def encode(self) -> str:
        text = self.model_dump_json(exclude_defaults=True)
        if len(text) > 2000:
            raise InputError("This button would carry too much data.")
        return text

    @classmethod
    def decode(cls, raw: str | None) -> "_Value":
        try:
            return cls.model_validate_json(raw or "")
        except ValidationError:
            raise InputError("That button is not valid any more.", hint="Ask the question again.") from None


class AnswerRef(_Value):
    """Points at a stored answer (votes, BibTeX) and, for "More papers", the next page."""

    answer_id: str = Field(pattern=r"^[a-f0-9]{8,64}$")
    offset: int = Field(default=0, ge=0, le=1000)

    @classmethod
    def decode(cls, raw: str | None) -> "AnswerRef":
        return super().decode(raw)  # type: ignore[return-value]


class ScholarPick(_Value):
    """One candidate of an ambiguous scholar name, as ``summarize`` accepts it."""

    name: str = Field(min_length=1, max_length=300)
    since: int | None = Field(default=None, ge=1000, le=3000)

    @classmethod
    def decode(cls, raw: str | None) -> "ScholarPick":
        return super().decode(raw)  # type: ignore[return-value]
