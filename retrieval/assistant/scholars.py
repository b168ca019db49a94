"""What the facade says about people (``Assistant.scholars``): a scholar's summary and its
pictures, and the collaborators for a topic (``retrieval.scholars``). Reads only."""

from __future__ import annotations

from pathlib import Path

from retrieval.assistant.installation import Installation
from retrieval.config import with_user_permissions
from retrieval.errors import InputError, NotInstalledError
from retrieval.results import AmbiguousScholarResult, CollaboratorsResult, ScholarSummaryResult


class Scholars:
    """Summaries, their pictures and collaborators over one installation's index."""

    def __init__(self, installation: Installation) -> None:
        self._installation = installation

    def summarize(self, name: str, *, since: int | None = None) -> ScholarSummaryResult | AmbiguousScholarResult:
        """The summary of the scholar ``name`` (on the roster or an author of indexed papers), or the
        candidates when the name fits several people (``retrieval.scholars.summary``); an empty
        name is an ``InputError``."""
        from retrieval.scholars.summary import summarize_scholar
        from retrieval.storage.roster import Roster

        if not name.strip():
            raise InputError("The scholar's name is empty.", hint='Try: paperbot summarize "Zhao Zhang"')
        settings = self._installation.settings
        return summarize_scholar(
            self._installation.index, settings, name.strip(), since=since, chat_model=self._installation.chat_model,
            roster=Roster.load(settings),
        )

    @staticmethod
    def pictures_missing() -> NotInstalledError | None:
        """What the scholar pictures lack: the error naming the extra to install when matplotlib
        (the optional extra ``plots``) is not installed, else None."""
        from retrieval.scholars.plot_support import plots_missing

        return plots_missing()

    def render_plots(self, summary: ScholarSummaryResult, out_dir: Path) -> list[Path]:
        """Draw the summary's co-author network and timeline into ``out_dir``; ``NotInstalledError``
        without the optional extra ``plots``. Files outside the data dir get the user's umask."""
        if (missing := self.pictures_missing()) is not None:
            raise missing
        from retrieval.scholars.plots import render_plots

        data_dir = self._installation.settings.data_dir
        outside = not Path(out_dir).absolute().is_relative_to(data_dir.absolute())
        made = [folder for folder in (Path(out_dir), *Path(out_dir).parents) if not folder.exists()]
        paths = render_plots(summary, out_dir)
        if outside:  # the user's own directory: their umask, not the data dir's
            with_user_permissions([*made, *paths])
        return paths

    def collaborators(
        self, topic: str, *, for_name: str | None = None, new_only: bool = False, limit: int = 10
    ) -> CollaboratorsResult:
        """Up to ``limit`` scholars who work on ``topic`` (``retrieval.scholars.collaborators``):
        for ``for_name``, and only those who never wrote with them when ``new_only``. An empty
        index says so and how to fill it; an empty topic is an ``InputError``."""
        from retrieval.scholars.collaborators import find_collaborators
        from retrieval.scholars.coverage import topic_judge

        if not topic.strip():
            raise InputError("The topic is empty.", hint='Try: paperbot collaborators "optical interconnects"')
        index = self._installation.index
        if index.count() == 0:  # say so, and how to fill it, rather than "nothing matches"
            return CollaboratorsResult(topic=topic.strip(), scholars=[], notice=index.explain_empty(None))
        return find_collaborators(index, self._installation.settings, topic.strip(), for_name=for_name,
                                  new_only=new_only, limit=limit, judge_topic=topic_judge(index))
