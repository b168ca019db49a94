"""retrieval/assistant/library.py: the mark that says a file is ingested (``paperbot demo``'s sample)
is written and deleted under the data dir's writer lock, in the same write as the records it marks.

Before, the demo set the mark after its ingest had released the lock, so a ``remove --source demo``
that fell in between took the records out and forgot the mark, and the demo then marked a sample
that was no longer indexed: every later demo skipped indexing and answered from nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.errors import BusyError
from retrieval.storage.locks import hold_writer_lock
from tests.support.model_cache import link_model_cache

TWO_ENTRIES = """
@article{lovelace1843, title = {Notes on the analytical engine}, author = {Lovelace, Ada}, year = {1843}}
@article{hopper1952, title = {The education of a computer}, author = {Hopper, Grace}, year = {1952}}
"""


def _writer_lock_is_held(settings: Settings) -> bool:
    """Whether some writer holds the lock: another thread's attempt without waiting is refused."""
    refused: list[bool] = []

    def attempt() -> None:
        try:
            with hold_writer_lock(settings, "ingest", wait=0):
                refused.append(False)
        except BusyError:
            refused.append(True)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join(30)
    return refused == [True]


def test_a_mark_is_set_and_forgotten_under_the_writer_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(_env_file=None, data_dir=link_model_cache(tmp_path / "data"), openai_api_key=None)
    sample = tmp_path / "sample.bib"
    sample.write_text(TWO_ENTRIES, encoding="utf-8")
    assistant = Assistant(settings, chat_model=None)
    store = assistant.index.store
    seen: list[tuple[str, bool]] = []
    for name in ("set_meta", "delete_meta"):
        original = getattr(store, name)

        def probe(key: str, *rest: object, original=original, name=name) -> object:
            if key == "sample-mark":
                seen.append((name, _writer_lock_is_held(settings)))
            return original(key, *rest)

        monkeypatch.setattr(store, name, probe)
    assert not _writer_lock_is_held(settings)  # the probe tells the two apart
    try:
        assistant.library.ingest_files([sample], mark="sample-mark")
        assert assistant.library.ingested_before(sample, "sample-mark")
        assistant.library.remove_sources([sample], forget="sample-mark")
        assert not assistant.library.holds_marked_file("sample-mark")
        assert assistant.records.count() == 0
    finally:
        assistant.close()
    assert seen == [("set_meta", True), ("delete_meta", True)]


def test_a_mark_records_one_file(tmp_path: Path) -> None:
    assistant = Assistant(Settings(_env_file=None, data_dir=tmp_path / "data", openai_api_key=None), chat_model=None)
    with pytest.raises(ValueError, match="one file"):
        assistant.library.ingest_files([tmp_path / "a.bib", tmp_path / "b.bib"], mark="sample-mark")
