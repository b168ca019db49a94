"""Action ids and the typed values our buttons carry.

A button value is at most 2,000 characters and comes back from Slack verbatim, so it only
holds a short reference (the stored answer's id, a page offset, a ``person:…`` id); everything
else is looked up in the data dir. Values are parsed strictly: a malformed or forged value
is an ``InputError``, never a crash.

Every button that summarizes one person ("Summarize" under an ambiguous name, the namesake
picks under a summary, "Profile" next to a ranked expert) carries a :class:`ScholarPick`. Its
action id is ``ACTION_PICK_SCHOLAR``, or ``ACTION_PICK_SCHOLAR`` plus ``_<n>`` where several
pick buttons share one actions block (Slack wants action ids unique within a block);
``PICK_SCHOLAR_ACTIONS`` matches all of them.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from retrieval.errors import InputError

ACTION_VOTE_UP = "paperbot_vote_up"
ACTION_VOTE_DOWN = "paperbot_vote_down"
ACTION_MORE_PAPERS = "paperbot_more_papers"
ACTION_BIBTEX = "paperbot_bibtex"
ACTION_PICK_SCHOLAR = "paperbot_pick_scholar"

ALL_ACTIONS = (ACTION_VOTE_UP, ACTION_VOTE_DOWN, ACTION_MORE_PAPERS, ACTION_BIBTEX, ACTION_PICK_SCHOLAR)
PICK_SCHOLAR_ACTIONS = re.compile(rf"^{ACTION_PICK_SCHOLAR}(?:_\d{{1,2}})?$")

PERSON_ID_PATTERN = r"^person:[0-9a-f]{6,64}$"


def pick_action(n: int) -> str:
    """The action id of the ``n``-th pick button of one actions block (``n`` from 0)."""
    return ACTION_PICK_SCHOLAR if n == 0 else f"{ACTION_PICK_SCHOLAR}_{n}"


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def encode(self) -> str:
        text = self.model_dump_json(exclude_defaults=True)
        if len(text) > 2000:
            raise InputError("This button would carry too much data.")
        return text

    @classmethod
    def decode(cls, raw: str | None) -> _Value:
        try:
            return cls.model_validate_json(raw or "")
        except ValidationError:
            raise InputError("That button is not valid any more.", hint="Ask the question again.") from None


class AnswerRef(_Value):
    """Points at a stored answer (votes, BibTeX) and, for "More papers", the next page."""

    answer_id: str = Field(pattern=r"^[a-f0-9]{8,64}$")
    offset: int = Field(default=0, ge=0, le=1000)

    @classmethod
    def decode(cls, raw: str | None) -> AnswerRef:
        return super().decode(raw)  # type: ignore[return-value]


class ScholarPick(_Value):
    """Exactly one person to summarize: their ``person:…`` id or, for a candidate without one,
    what ``summarize`` resolves to them alone (an ORCID, an OpenAlex author id or a name no
    other candidate shares). Buttons posted before person ids existed carry ``name`` only."""

    person_id: str | None = Field(default=None, pattern=PERSON_ID_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=300)
    since: int | None = Field(default=None, ge=1000, le=3000)

    @model_validator(mode="after")
    def _one_reference(self) -> ScholarPick:
        if (self.person_id is None) == (self.name is None):
            raise ValueError("a pick names a person id or a name")
        return self

    @property
    def reference(self) -> str:
        """What to pass to ``Assistant.scholars.summarize``."""
        return self.person_id or self.name or ""

    @classmethod
    def for_person(cls, person_id: str | None, *, fallback: str | None = None,
                   since: int | None = None) -> ScholarPick | None:
        """The pick for ``person_id``, else for ``fallback``; None when neither can be carried."""
        for key, value in (("person_id", person_id), ("name", fallback)):
            if value:
                try:
                    return cls.model_validate({key: value, "since": since})
                except ValidationError:
                    pass
        return None

    @classmethod
    def decode(cls, raw: str | None) -> ScholarPick:
        return super().decode(raw)  # type: ignore[return-value]
