"""The parts of one installation that every sub-facade of ``Assistant`` shares.

``Installation`` holds the settings, the index (opened once on first use, whichever thread asks
first), the chat model (resolved from the settings on first use) and the data dir's writer lock.
The sub-facades (``retrieval.assistant.library``, ``.records``, ``.fetching``, ``.roster``,
``.scholars``, ``.upkeep``) each take the one ``Installation`` of their ``Assistant``, so they
open no index, model or lock of their own.

``writing(activity)`` is the only way a sub-facade writes: it holds the data dir's writer lock
(``retrieval.storage.locks.hold_writer_lock``) from before the write path first touches the
index until it is done (``tests/assistant/test_structure.py`` checks that every index write of
the sub-facades is inside it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from retrieval.answers.chat_model import ChatModelChoice, FromSettings
from retrieval.config import Settings, open_data_dir

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from retrieval.index.paper_index import PaperIndex
    from retrieval.storage.locks import Activity

log = logging.getLogger(__name__)


class Installation:
    """Settings, the lazily opened index and chat model, and the writer lock of one data dir."""

    def __init__(self, settings: Settings, *, index: PaperIndex | None, chat_model: ChatModelChoice,
                 notice: Callable[[str], None] | None = None) -> None:
        """Makes the data dir private (``config.open_data_dir``: 0700, files 0600). ``index``: one
        already open, else opened on first use; ``chat_model`` and ``notice`` as ``Assistant`` takes them."""
        self.settings = settings
        self.notice: Callable[[str], None] = notice or log.warning
        self._index = index
        self._chat_model = chat_model
        # The index and the chat model are made once, whichever thread asks first (the Slack workers
        # and the start-up warm-up at the same moment: two indexes would open Chroma twice at once,
        # and chromadb's shared in-process system breaks, failing those searches).
        self._lock = threading.RLock()
        open_data_dir(settings, notice=self.notice)

    @property
    def index(self) -> PaperIndex:
        """The index, opened on first use (once, whichever thread asks first)."""
        if self._index is not None:
            return self._index
        with self._lock:
            if self._index is None:
                from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, paper_embedder
                from retrieval.index.paper_index import PaperIndex
                from retrieval.storage.roster import names_of

                # vectors cached by (encoder, text hash): re-indexing and repairs never re-encode;
                # author filters follow the roster's aliases ("by Lenny Guo" finds Luanzheng Guo too)
                cache = EmbeddingCache(default_cache_path(self.settings.cache_dir))
                self._index = PaperIndex.open(self.settings, embed=paper_embedder(cache),
                                              roster_names=lambda name: names_of(self.settings, name))
            return self._index

    @property
    def opened_index(self) -> PaperIndex | None:
        """The index if it is open already, else None (opens nothing)."""
        return self._index

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The chat model in use, or None (extractive answers); built on first use (once) when chosen
        ``FROM_SETTINGS``."""
        choice = self._chat_model
        if not isinstance(choice, FromSettings):
            return choice
        with self._lock:
            if isinstance(self._chat_model, FromSettings):
                # imports no LLM stack when none is configured
                from retrieval.answers.chat_model import resolve_chat_model

                self._chat_model = resolve_chat_model(self._chat_model, self.settings)
            return self._chat_model

    @property
    def chat_model_choice(self) -> ChatModelChoice:
        """The chat model as chosen: a model, None, or ``FROM_SETTINGS`` while it is not built yet."""
        return self._chat_model

    @contextmanager
    def writing(self, activity: Activity) -> Iterator[None]:
        """The writer lock of the data dir, for one write path (``retrieval.storage.locks``).

        The embedded vector index is closed before the lock is released, so that everything it
        holds in memory is on disk when the next writer opens it (this process reopens it on
        its next search).
        """
        from retrieval.storage.locks import hold_writer_lock

        with hold_writer_lock(self.settings, activity, notice=self.notice):
            try:
                yield
            finally:
                if self._index is not None:
                    self._index.dense.refresh()
