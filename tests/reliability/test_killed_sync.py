"""A `paperbot sync` killed with SIGKILL mid-run leaves a consistent index and resumes cleanly.

The sync commits one batch per scholar and advances a scholar's sync marks only after that
batch is committed. The roster here is two scholars served by a local 127.0.0.1 server
replaying recorded responses (``tests/ingest/recorded.py``): Adrian Del Maestro (synced first,
roster order is by name) and Martin Fenner. The server holds its answer to Fenner's Crossref
request, his last fetch before his batch is ingested, until the test has killed the process, so
the kill lands deterministically after the first scholar's commit and while the second
scholar's works (arXiv, OpenAlex already received) exist only in the dying process's memory.

Then, through the CLI only (``main`` in this process after the kill, to keep the suite fast):

* the record store holds exactly the first scholar's papers, the roster marks only him synced;
* ``doctor`` finds no record without a vector and ``doctor --repair`` makes the stores agree;
* re-running `paperbot sync` exits 0 and adds exactly the second scholar's papers, once each;
* the final ids are those of a sync that was never interrupted, and the record store, Chroma
  and the BM25 index hold the same number of records.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from retrieval.storage.schema import HEAD
from tests.ingest.recorded import (
    DEL_MAESTRO,
    FENNER,
    FENNER_ORCID,
    IGNORED_PARAMS,
    crossref_url,
    replay,
    roster_recordings,
)
from tests.reliability.helpers import (
    count_records,
    lexical_documents,
    link_model_cache,
    poll,
    query,
    run_main,
    spawn,
    stored_records,
)
from tests.sources.replay import Recording, Replay, ReplayServer, request_key

pytestmark = pytest.mark.slow

HOLD_LIMIT = 120.0  # seconds a held response may wait for the test before being served anyway


class HoldingReplay(Replay):
    """A replay that holds the response to one request until ``release`` is set.

    ``reached`` is set when the held request arrives: the process under test is then blocked
    in that request, at a known point of its work. ``finish()`` releases it and waits for the
    server thread that held it (whose client may be gone) to be done.
    """

    def __init__(self, recordings: Iterable[Recording], *, hold: str) -> None:
        super().__init__(recordings, ignore_params=IGNORED_PARAMS)
        self._held = request_key("GET", hold, self.ignore)
        self.reached = threading.Event()
        self.release = threading.Event()
        self._holder: threading.Thread | None = None

    def lookup(self, method: str, url: str) -> Recording | None:
        if request_key(method, url, self.ignore) == self._held and not self.release.is_set():
            self._holder = threading.current_thread()
            self.reached.set()
            self.release.wait(timeout=HOLD_LIMIT)
        return super().lookup(method, url)

    def finish(self) -> None:
        self.release.set()
        if self._holder is not None:
            self._holder.join(timeout=10)


def _sources_env(base: str) -> dict[str, str]:
    return {
        "PAPERBOT_ARXIV_URL": f"{base}/api/query",
        "PAPERBOT_OPENALEX_URL": base,
        "PAPERBOT_CROSSREF_URL": base,
        "PAPERBOT_ARXIV_DELAY": "0",
        "PAPERBOT_HTTP_MAX_RETRIES": "0",
        "PAPERBOT_HTTP_TIMEOUT": str(HOLD_LIMIT),  # the held request must not time out first
    }


def _add_roster(data_dir: Path, env: dict[str, str]) -> None:
    for argv in (("scholars", "add", FENNER, "--orcid", FENNER_ORCID), ("scholars", "add", DEL_MAESTRO)):
        run = run_main(*argv, data_dir=data_dir, **env)
        assert run.code == 0, run.stderr


def _sync(data_dir: Path, env: dict[str, str]) -> dict:
    run = run_main("sync", "--json", data_dir=data_dir, **env)
    assert run.code == 0, run.stderr
    return run.json()


def _doctor(data_dir: Path, *extra: str) -> dict:
    run = run_main("doctor", "--json", *extra, data_dir=data_dir)
    assert run.code in (0, 3), run.stderr
    assert "Traceback" not in run.stderr
    return run.json()


def _synced_sources(data_dir: Path) -> dict[str, set[str]]:
    """``name -> sources with a sync mark``, read from the roster's table in the data dir's database."""
    rows = query(data_dir / "records.sqlite3", "SELECT name, last_synced FROM scholars")
    return {name: set(json.loads(marks)) for name, marks in rows}


def _distinct(data_dir: Path, column: str) -> tuple[int, int]:
    """(rows with a value in ``column``, distinct values) in the record store."""
    sql = f"SELECT COUNT({column}), COUNT(DISTINCT {column}) FROM papers"
    total, distinct = query(data_dir / "records.sqlite3", sql)[0]
    return int(total), int(distinct)


def test_sigkill_between_scholars_then_doctor_and_rerun(tmp_path: Path, model_cache: Path) -> None:
    with ReplayServer(replay([])) as server:
        env = _sources_env(server.url)

        # the reference: the same sync, never interrupted, into a fresh data dir
        clean = link_model_cache(tmp_path / "clean", model_cache)
        _add_roster(clean, env)
        server.replay = replay(roster_recordings(server.url))
        reference = _sync(clean, env)
        assert server.replay.unmatched == []
        first = {entry["name"]: set(entry["new"]) for entry in reference["scholars"]}
        expected = set(reference["new_paper_ids"])
        assert [entry["name"] for entry in reference["scholars"]] == [DEL_MAESTRO, FENNER]
        assert first[DEL_MAESTRO] and first[FENNER] - first[DEL_MAESTRO]
        assert set(stored_records(clean)) == expected

        # the killed run: a subprocess blocked in the second scholar's last fetch
        killed = link_model_cache(tmp_path / "killed", model_cache)
        _add_roster(killed, env)
        holding = HoldingReplay(roster_recordings(server.url), hold=crossref_url(server.url, f"orcid:{FENNER_ORCID}"))
        server.replay = holding
        process = spawn("sync", "--json", data_dir=killed, **env)  # type: ignore[arg-type]  # mypy matches **dict[str, str] to file_size_limit= too
        try:
            def held() -> bool | None:
                if process.poll() is not None:
                    raise AssertionError(f"sync ended before the held request: {process.communicate()[1][-2000:]}")
                return True if holding.reached.is_set() else None

            poll(held, timeout=180, what="the second scholar's Crossref request")
            # the first scholar's batch is committed before the second scholar is fetched
            assert count_records(killed) == len(first[DEL_MAESTRO])
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            process.kill()
            process.communicate()
            holding.finish()  # its client is dead: the server logs the failed write now, not later
        assert process.returncode == -signal.SIGKILL
        assert holding.unmatched == []

        # what the kill left: the first scholar's papers, marked synced; nothing of the second
        kept = stored_records(killed)
        assert set(kept) == first[DEL_MAESTRO]
        marks = _synced_sources(killed)
        assert marks[DEL_MAESTRO] == {"arxiv"} and marks[FENNER] == set()

        # 1. doctor: never a record that looks indexed without a vector
        found = _doctor(killed)
        assert found["records"] == len(kept)
        assert found["missing_vectors"] == [] and found["stale_vectors"] == []
        assert found["database"] == {"backend": "sqlite", "where": str((killed / "records.sqlite3").resolve()),
                                     "revision": HEAD, "head": HEAD, "set_aside": [], "read_only": None,
                                     "current": True}  # the roster's

        # 2. doctor --repair makes the stores agree
        assert _doctor(killed, "--repair")["repaired"] is True
        after_repair = _doctor(killed)
        assert (after_repair["records"], after_repair["vectors"]) == (len(kept), len(kept))
        assert after_repair["orphan_vectors"] == [] and after_repair["lexical_current"] is True

        # 3. re-running completes the work: exactly the missing papers are new
        server.replay = replay(roster_recordings(server.url))
        rerun = _sync(killed, env)
        assert server.replay.unmatched == []
        assert set(rerun["new_paper_ids"]) == expected - set(kept)
        assert not any(entry["errors"] for entry in rerun["scholars"])
        assert all(entry["completed"] for entry in rerun["scholars"])

    # 4. the same ids as the sync that was never interrupted, each record once in every store
    final_ids = set(stored_records(killed))
    assert final_ids == set(stored_records(clean)) == expected
    assert stored_records(killed) == stored_records(clean)  # same ids, same content hashes
    rows, ids = _distinct(killed, "id")
    assert rows == ids == len(expected)
    with_doi, distinct_doi = _distinct(killed, "doi")
    assert with_doi == distinct_doi  # no paper stored twice under two ids
    final = _doctor(killed)
    assert final["missing_vectors"] == final["stale_vectors"] == final["orphan_vectors"] == []
    assert final["records"] == final["vectors"] == len(expected)
    # the BM25 index is rebuilt lazily (next search, or repair): once rebuilt it holds each record once
    rebuilt = _doctor(killed, "--repair")
    assert rebuilt["records"] == rebuilt["vectors"] == len(expected) and rebuilt["orphan_vectors"] == []
    assert lexical_documents(killed) == len(expected)
    assert _synced_sources(killed) == _synced_sources(clean)
