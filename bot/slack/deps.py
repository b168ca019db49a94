"""What every listener needs, built once by ``app.build_slack`` and passed down explicitly."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.slack.dedupe import StoredDeduper
from bot.slack.deliveries import Deliveries
from bot.slack.queue import WorkQueue
from bot.slack.store import SlackStore
from retrieval.config import Settings

if TYPE_CHECKING:
    from retrieval.assistant import Assistant


class SyncRuns:
    """The sync started from Slack in this process, if any: one at a time (``bot/slack/sync_jobs.py``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.user: str | None = None  # who started it; None: no sync runs
        self.channel: str | None = None
        self.message_ts: str | None = None  # its message, once posted
        self.following: set[int] = set()  # the queued sync jobs this process shows in Slack now

    def claim(self, user: str, channel: str) -> bool:
        """Start one for ``user`` in ``channel``; False when one runs already."""
        with self._lock:
            if self.user is not None:
                return False
            self.user, self.channel, self.message_ts = user, channel, None
            return True

    def started(self, message_ts: str | None) -> None:
        self.message_ts = message_ts

    def release(self) -> None:
        with self._lock:
            self.user = self.channel = self.message_ts = None

    def follow(self, job_id: int) -> None:
        with self._lock:
            self.following.add(job_id)

    def followed(self, job_id: int) -> None:
        """Job ``job_id``'s outcome is shown (a job let go of at shutdown stays: nobody here follows it again)."""
        with self._lock:
            self.following.discard(job_id)

    def is_following(self, job_id: int) -> bool:
        with self._lock:
            return job_id in self.following


@dataclass
class SlackDeps:
    """Settings, the core facade, state stores and the concurrency/time seams."""

    settings: Settings
    assistant: Assistant
    store: SlackStore
    queue: WorkQueue
    deduper: StoredDeduper
    deliveries: Deliveries
    background: ThreadPoolExecutor
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    update_interval: float = 1.0  # seconds between chat.update calls of one streaming answer
    queue_notice_wait: float = 10.0  # how long a started job waits for its "position N" notice
    secrets: tuple[str, ...] = field(default=(), repr=False)
    syncs: SyncRuns = field(default_factory=SyncRuns)

    def run_in_background(self, task: Callable[[], None]) -> None:
        """Small, quick side tasks (refusals, notices) off the request thread."""
        self.background.submit(task)

    def close(self) -> None:
        self.queue.close()
        self.background.shutdown(wait=True, cancel_futures=True)
        self.store.close()
        self.assistant.close()  # the follows store it opened (reopened on next use)
