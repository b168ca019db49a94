"""retrieval/assistant/installation.py: the parts the sub-facades share, made on first use, once, whichever thread asks first."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.index.paper_index import PaperIndex


def test_threads_asking_for_the_index_at_once_open_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Slack workers and the start-up warm-up asked at the same moment: each opened an index,
    and two embedded Chroma clients of one directory started at once broke chromadb's shared
    system (some of the first answers of a burst failed)."""
    opened: list[str] = []
    first_inside, release, second_inside = threading.Event(), threading.Event(), threading.Event()
    index = object()

    def fake_open(cls: type[PaperIndex], settings: Settings, *args: Any, **kwargs: Any) -> object:
        opened.append(threading.current_thread().name)
        if len(opened) == 1:
            first_inside.set()
            release.wait(10)
        else:
            second_inside.set()
        return index

    monkeypatch.setattr(PaperIndex, "open", classmethod(fake_open))
    core = Assistant(Settings(_env_file=None, data_dir=tmp_path, openai_api_key=None), chat_model=None)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(core.index), name=f"asker-{n}") for n in range(4)]
    threads[0].start()
    assert first_inside.wait(10)
    for thread in threads[1:]:
        thread.start()
    try:
        assert not second_inside.wait(1.0), opened  # the others wait for the first, they do not open their own
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
    assert opened == ["asker-0"] and seen == [index] * 4
