"""App Home: what is indexed (papers, scholars, last sync) and how to ask."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient

from bot.slack.blocks import HELP_TEXT
from bot.slack.formatting import Block, context, divider, escape, header, sections

if TYPE_CHECKING:
    from bot.slack.deps import SlackDeps
    from retrieval.results import IndexStats

log = logging.getLogger(__name__)

STATS_TTL = 60.0  # seconds a computed IndexStats is reused across Home tab openings


def home_view(stats: IndexStats | None, *, follows: int = 0) -> dict[str, Any]:
    """The Home tab (a pure function of the index statistics)."""
    blocks: list[Block] = [header("paperbot: cited answers from your group's papers")]
    if stats is None:
        blocks.extend(sections(":warning: The index cannot be read right now; answers may fail. Try again later."))
    elif stats.papers == 0:
        blocks.extend(sections(
            "*Nothing is indexed yet.* Whoever runs paperbot can add papers with `paperbot ingest …` "
            "or add scholars with `paperbot scholars add …` and run `paperbot sync`."
        ))
    else:
        last_sync = escape(stats.last_sync) if stats.last_sync else "never"
        facts = [
            f"*Papers indexed:* {stats.papers:,}",
            f"*Scholars on the roster:* {stats.scholars:,}",
            f"*Last sync:* {last_sync}",
        ]
        if stats.by_year:
            years = list(stats.by_year)
            facts.append(f"*Publication years:* {min(years)}–{max(years)}")
        if stats.by_source:
            facts.append("*Sources:* " + escape(", ".join(f"{name} ({count:,})" for name, count in stats.by_source.items())))
        if follows:
            facts.append(f"*Follows across channels:* {follows}")
        blocks.extend(sections("\n".join(facts)))
    blocks.append(divider())
    blocks.extend(sections(HELP_TEXT))
    blocks.append(context(
        "Answers cite only indexed records; when nothing indexed supports an answer, paperbot says so. "
        "Use :thumbsup: / :thumbsdown: under answers to tell the maintainers what worked."
    ))
    return {"type": "home", "blocks": blocks}  # about a dozen blocks; the Home tab allows 100


class HomeTab:
    """Publishes the Home tab, reusing statistics for ``STATS_TTL`` seconds."""

    def __init__(self, deps: SlackDeps) -> None:
        self._deps = deps
        self._lock = threading.Lock()
        self._cached: tuple[float, IndexStats | None] | None = None

    def stats(self) -> IndexStats | None:
        now = self._deps.clock()
        with self._lock:
            if self._cached and now - self._cached[0] < STATS_TTL:
                return self._cached[1]
        try:
            stats = self._deps.assistant.records.stats()
        except Exception:
            log.warning("index statistics unavailable for the Home tab", exc_info=True)
            stats = None
        with self._lock:
            self._cached = (now, stats)
        return stats

    def publish(self, client: WebClient, user_id: str) -> None:
        view = home_view(self.stats(), follows=len(self._deps.assistant.follows.list()))
        client.views_publish(user_id=user_id, view=view)
