"""The follow operations of the facade (``Assistant.follows``): what the Slack door calls.

A channel follows a scholar or a topic; after a sync, the serving bot posts each new matching
paper once per follow: a replica claims an alert before posting it (``claims``), so however many
replicas poll the queue, one posts it. The follows store (``alerts.follows.FollowStore``) is opened on first
use, once even when several Slack listener threads ask at the same time, and closed with
``close`` (it reopens on next use).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from retrieval.alerts.claims import AlertClaims
from retrieval.alerts.follows import FollowStore, guess_kind, note_new_papers, parse_follow
from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import Follow, FollowAdded, PendingAlerts


class ChannelFollows:
    """Follow, unfollow and list per channel; the queue of new papers the alerts are made from.

    ``papers(ids)`` reads indexed records and ``is_known_scholar(name)`` says whether a name is
    a person (the facade's ``Assistant.records.papers`` and ``Assistant.roster.is_known``), so this
    module needs no index of its own.
    """

    def __init__(self, settings: Settings, *, papers: Callable[[Sequence[str]], list[Paper]],
                 is_known_scholar: Callable[[str], bool]) -> None:
        self.settings = settings
        self._papers = papers
        self._is_known_scholar = is_known_scholar
        self._store: FollowStore | None = None
        self._claims: AlertClaims | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> FollowStore:
        with self._lock:
            if self._store is None:
                self._store = FollowStore.for_settings(self.settings)
            return self._store

    @property
    def claims(self) -> AlertClaims:
        """The claims a replica takes on an alert before posting it, so that each (follow, paper) is
        posted once however many replicas poll the queue (``alerts.claims``)."""
        store = self.store
        with self._lock:
            if self._claims is None or self._claims.database is not store.database:
                self._claims = AlertClaims(store.database)
            return self._claims

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def follow(self, channel: str, text: str, *, created_by: str | None = None) -> FollowAdded:
        """Follow "scholar NAME", "topic WORDS" or just "WORDS" in ``channel``; for the last, the
        kind is guessed (``guess_kind``: an id or a known scholar is a scholar, else a topic)."""
        kind, query = parse_follow(text)
        chosen = kind or guess_kind(query, self._is_known_scholar)
        follow, created = self.store.add(channel, chosen, query, created_by=created_by)
        return FollowAdded(follow=follow, created=created, guessed=kind is None)

    def unfollow(self, channel: str, reference: str) -> Follow | None:
        """Stop a follow of ``channel`` by its number or what it follows; None when none matched."""
        return self.store.remove(channel, reference)

    def list(self, channel: str | None = None) -> list[Follow]:
        """The follows of ``channel`` (of every channel: None), in the order they were made."""
        return self.store.list(channel)

    def note_new_papers(self, paper_ids: Sequence[str]) -> int:
        """Queue a sync's NEW papers for the alerts (any process: the serving bot posts them)."""
        if self._store is None:  # a CLI sync: open, write, close
            return note_new_papers(self.settings, paper_ids)
        return self.store.note_new_papers(paper_ids)

    def pending(self) -> PendingAlerts:
        """The queued new papers and, per follow, those it matches and has not announced yet."""
        ids = self.store.queued_new_papers()
        return PendingAlerts(paper_ids=ids, alerts=self.store.pending_alerts(self._papers(ids)) if ids else [])

    def done_with(self, paper_ids: Sequence[str]) -> None:
        """Drop processed ids from the queue (after their alerts were posted, or another replica's
        claims of them were settled: ``claims``)."""
        self.store.done_with_new_papers(paper_ids)
