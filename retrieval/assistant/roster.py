"""The scholars kept in sync (``Assistant.roster``): list, add, remove, and whether a name is
someone paperbot knows. The roster itself is ``retrieval.storage.roster``; its papers are
fetched by ``Assistant.fetching.sync``."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval.assistant.installation import Installation
from retrieval.results import Scholar
from retrieval.storage.roster import Roster


class ScholarRoster:
    """The roster of one installation, read fresh on every call (another process may change it)."""

    def __init__(self, installation: Installation) -> None:
        self._installation = installation

    def scholars(self) -> list[Scholar]:
        """The roster, sorted by name."""
        return Roster.load(self._installation.settings).list()

    def add(self, name: str, *, orcid: str | None = None, openalex_id: str | None = None,
            arxiv_name: str | None = None, aliases: Sequence[str] = ()) -> Scholar:
        """Put a scholar on the roster (``Roster.add``: a name or id already there is an ``InputError``)."""
        return Roster.load(self._installation.settings).add(name, orcid=orcid, openalex_id=openalex_id,
                                                            arxiv_name=arxiv_name, aliases=aliases)

    def remove(self, name: str) -> Scholar:
        """Take the scholar known by ``name`` (any name, alias or id) off the roster; papers stay indexed."""
        return Roster.load(self._installation.settings).remove(name)

    def is_known(self, name: str) -> bool:
        """On the roster (name, alias or id), or an author of some indexed paper."""
        if Roster.load(self._installation.settings).find(name) is not None:
            return True
        return bool(self._installation.index.knows_author(name))
