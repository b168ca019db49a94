"""Another process writes to the embedded index while this one has it open (an ingest or a sync
while ``paperbot serve`` runs): this process sees the new records at its next call, without a
restart, and its own writes keep the index consistent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper
from tests.support.patience import patience

from .conftest import HashEncoder, make_settings

REPO = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from retrieval.config import Settings
    from retrieval.index.paper_index import PaperIndex
    from retrieval.records.paper import Paper
    from tests.index.conftest import HashEncoder

    data_dir, collection, records = sys.argv[1:4]
    settings = Settings(_env_file=None, data_dir=data_dir, chroma_url=None, collection=collection, min_relevance=None)
    papers = [Paper.model_validate_json(line) for line in Path(records).read_text().splitlines()]
    index = PaperIndex.open(settings, HashEncoder())
    print(len(index.upsert(papers).added))
""")


def write_from_another_process(settings, papers: list[Paper], tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(paper.model_dump_json() for paper in papers), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", WRITER, str(settings.data_dir), settings.collection, str(records)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=patience(120))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(len(papers))


@pytest.mark.slow
def test_records_written_by_another_process_are_found_without_a_restart(tmp_path, arxiv_papers):
    settings = make_settings(tmp_path / "data")
    index = PaperIndex.open(settings, HashEncoder())
    try:
        index.upsert(arxiv_papers[:10])
        newcomer = arxiv_papers[15]
        assert newcomer.id not in {h.paper.id for h in index.search(newcomer.title, k=5)}  # loaded, warm

        write_from_another_process(settings, arxiv_papers[10:20], tmp_path)

        assert index.search(newcomer.title, k=5)[0].paper.id == newcomer.id
        dense = index.dense_search(newcomer.title, k=20)  # the vector index itself sees it
        assert newcomer.id in {h.paper.id for h in dense}
        assert dense[0].dense_score is not None
        assert index.upsert(arxiv_papers[20:25]).added == [p.id for p in arxiv_papers[20:25]]
        report = index.check_consistency()
        assert report.ok and report.records == report.vectors == 25
    finally:
        index.close()
    reopened = PaperIndex.open(settings, HashEncoder())  # what a restart sees: every vector on disk
    try:
        assert reopened.check_consistency().ok
        everything = {h.paper.id for h in reopened.dense_search(newcomer.title, k=25)}
        assert everything == {p.id for p in arxiv_papers[:25]}
    finally:
        reopened.close()


@pytest.mark.slow
def test_searches_running_in_threads_survive_the_reload(tmp_path, arxiv_papers):
    import threading

    settings = make_settings(tmp_path / "data")
    index = PaperIndex.open(settings, HashEncoder())
    failures: list[BaseException] = []
    searches = [0]
    stop = threading.Event()

    def search_until_stopped() -> None:
        while not stop.is_set():
            try:
                index.search("discrete dipole approximation light scattering", k=5)
                searches[0] += 1
            except BaseException as exc:
                failures.append(exc)
                return

    try:
        index.upsert(arxiv_papers[:10])
        workers = [threading.Thread(target=search_until_stopped) for _ in range(4)]
        for worker in workers:
            worker.start()
        write_from_another_process(settings, arxiv_papers[10:15], tmp_path)
        write_from_another_process(settings, arxiv_papers[15:20], tmp_path)
        before = searches[0]
        threading.Event().wait(0.5)
        stop.set()
        for worker in workers:
            worker.join(30)
        assert not failures, failures[0]
        assert searches[0] > before  # still answering after the reloads
        assert len(index.search(arxiv_papers[17].title, k=3)) == 3
    finally:
        stop.set()
        index.close()
