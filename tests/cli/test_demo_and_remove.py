"""`paperbot demo` keeps the sample out of the user's data dir; `paperbot remove --source` takes
a file's records (or an earlier demo's sample) back out, keeping what other sources describe."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.commands.demo import META_KEY
from retrieval.config import Settings
from retrieval.ingest.removal import without_sources
from retrieval.records.paper import Author, Paper, Provenance
from tests.cli.conftest import PAPERBOT, paperbot, paperbot_here
from tests.support.model_cache import link_model_cache

DUPLICATE_OF_A_SAMPLE_PAPER = """@article{pebble2007,
  title = {Sparsity-certifying Graph Decompositions},
  author = {Streinu, Ileana and Theran, Louis},
  year = {2007},
  eprint = {0704.0002},
  archivePrefix = {arXiv},
}
"""


def _contents(data_dir: Path) -> tuple[list[str], str]:
    """What a data dir holds: its files (SQLite's write-ahead log and shared memory aside: a
    reader may fold the log into the database) and every record as exported."""
    names = sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*")
                   if p.is_file() and not p.name.endswith(("-shm", "-wal")))
    return names, paperbot_here("export", data_dir=data_dir).stdout


def test_demo_settings_point_beside_the_data_dir_and_never_at_a_server(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "paperbot", chroma_url="http://127.0.0.1:9")
    demo = settings.for_demo()
    assert demo.data_dir == tmp_path / "paperbot-demo"
    assert demo.chroma_url is None
    assert Settings(data_dir=tmp_path / "a", demo_data_dir=tmp_path / "b").for_demo().data_dir == tmp_path / "b"


@pytest.mark.slow
def test_demo_leaves_the_users_data_dir_alone(tmp_path: Path, small_corpus: Path) -> None:
    mine = link_model_cache(tmp_path / "mine")
    assert paperbot("ingest", str(small_corpus), data_dir=mine).code == 0
    before = _contents(mine)

    first = paperbot("demo", "--json", data_dir=mine)
    assert first.code == 0, first.stderr
    demo_dir = tmp_path / "mine-demo"
    assert f"into {demo_dir} (the demo's own data dir, not yours" in first.stderr
    assert first.json()["citations"], "the demo answers from the sample"
    assert _contents(mine) == before
    assert "earlier demo" not in first.stderr

    again = paperbot("demo", data_dir=mine)
    assert again.code == 0
    assert f"already indexed in {demo_dir}" in again.stderr
    assert f"PAPERBOT_DATA_DIR={demo_dir} paperbot ask" in again.stdout
    assert _contents(mine) == before

    fresh = tmp_path / "never-used"
    assert paperbot("demo", data_dir=fresh, PAPERBOT_DEMO_DATA_DIR=str(demo_dir)).code == 0
    assert not fresh.exists(), "the demo does not even create the user's data dir"


@pytest.fixture
def polluted(tmp_path: Path, small_corpus: Path) -> Path:
    """A data dir where an earlier demo put the sample beside the group's own file."""
    data_dir = link_model_cache(tmp_path / "data")
    own = tmp_path / "own.bib"
    own.write_text(DUPLICATE_OF_A_SAMPLE_PAPER, encoding="utf-8")
    assert paperbot_here("ingest", str(small_corpus), str(own), data_dir=data_dir).code == 0
    from retrieval.assistant import Assistant

    assistant = Assistant(Settings(data_dir=data_dir), chat_model=None)
    assistant.library.ingest_files([small_corpus], mark=META_KEY)  # what the old demo recorded (records unchanged)
    # the old demo's records named no file (``Provenance.file`` is younger): so written here, in place
    store = assistant.index.store
    store.put_many([paper.model_copy(update={"provenance": [item.model_copy(update={"file": None})
                                                             for item in paper.provenance]})
                    for paper in store.iter_papers()])
    assistant.close()
    return data_dir


def test_remove_takes_a_files_records_out_and_keeps_what_others_describe(
        polluted: Path, small_corpus: Path, tmp_path: Path) -> None:
    own = tmp_path / "own.bib"
    dry = paperbot_here("remove", "--source", str(small_corpus), "--dry-run", "--json", data_dir=polluted)
    assert dry.code == 0, dry.stderr
    planned = dry.json()
    assert planned["dry_run"] is True and len(planned["removed"]) == 39
    assert paperbot_here("stats", "--json", data_dir=polluted).json()["papers"] == 40

    done = paperbot_here("remove", "--source", str(small_corpus), "--json", data_dir=polluted).json()
    assert sorted(done["removed"]) == sorted(planned["removed"])
    [kept] = done["kept"]
    assert kept["id"] == "arxiv:0704.0002"
    assert kept["other_sources"] == ["bibtex pebble2007"]
    assert "abstract" in kept["fields_removed"] and "title" not in kept["fields_removed"]
    assert paperbot_here("stats", "--json", data_dir=polluted).json()["papers"] == 1
    [record] = [line for line in paperbot_here("export", data_dir=polluted).stdout.splitlines() if line]
    assert '"source":"jsonl"' not in record and '"abstract"' not in record

    text = paperbot_here("remove", "--source", str(own), data_dir=polluted)
    assert text.code == 0
    assert text.stdout.startswith(f"Removed 1 records of {own}.")
    assert paperbot_here("stats", "--json", data_dir=polluted).json()["papers"] == 0


def test_remove_demo_names_the_bundled_sample_and_forgets_the_old_demo(polluted: Path, tmp_path: Path) -> None:
    # the fixture's sample is a subset of the bundled one: `demo` reads the bundled file
    run = paperbot_here("remove", "--source", "demo", "--json", data_dir=polluted)
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["source"] == "demo"
    assert len(report["removed"]) == 39 and len(report["kept"]) == 1
    assert report["not_indexed"] == 596 - 40
    from retrieval.assistant import Assistant

    assistant = Assistant(Settings(data_dir=polluted), chat_model=None)
    try:
        assert not assistant.library.holds_marked_file(META_KEY)
    finally:
        assistant.close()


def test_remove_refuses_what_it_cannot_read(tmp_path: Path, polluted: Path) -> None:
    missing = paperbot_here("remove", "--source", str(tmp_path / "nope.bib"), data_dir=polluted)
    assert missing.code == 2
    assert "No such file" in missing.stderr and "nothing was removed" in missing.stderr

    empty = tmp_path / "empty.bib"
    empty.write_text("", encoding="utf-8")
    unreadable = paperbot_here("remove", "--source", str(empty), data_dir=polluted)
    assert unreadable.code == 2
    assert "Nothing could be read from" in unreadable.stderr and "nothing was removed" in unreadable.stderr
    assert paperbot_here("stats", "--json", data_dir=polluted).json()["papers"] == 40

    nowhere = tmp_path / "no-index"
    shutil.rmtree(nowhere, ignore_errors=True)
    run = paperbot_here("remove", "--source", "demo", data_dir=nowhere)
    assert run.code == 2 and "Nothing is indexed" in run.stderr
    assert not nowhere.exists()


def _paper(*sources: tuple[str, str, list[str]], **fields: object) -> Paper:
    return Paper(title="A paper", authors=[Author(name="Ada Lovelace")], year=2020,
                 provenance=[Provenance(source=s, source_id=i, fields=f) for s, i, f in sources], **fields)


def test_without_sources_clears_only_the_fields_no_remaining_source_supplied() -> None:
    paper = _paper(("jsonl", "x1", ["title", "authors", "abstract", "url"]), ("bibtex", "k", ["title", "authors", "url"]),
                   abstract="Text.", url="https://example.org/a")
    stays, cleared = without_sources(paper, {("jsonl", "x1", "")})
    assert cleared == ["abstract"]
    assert stays.abstract is None and stays.url == "https://example.org/a"
    assert [item.source for item in stays.provenance] == ["bibtex"]


def test_without_sources_clears_nothing_when_a_remaining_source_does_not_list_its_fields() -> None:
    paper = _paper(("jsonl", "x1", ["title", "abstract"]), ("bibtex", "k", []), abstract="Text.")
    stays, cleared = without_sources(paper, {("jsonl", "x1", "")})
    assert cleared == [] and stays.abstract == "Text."


def test_a_reader_that_goes_away_ends_the_command_quietly(polluted: Path) -> None:
    from bench.common import clean_env

    proc = subprocess.Popen([str(PAPERBOT), "export"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(polluted), cwd=polluted.parent)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first record is written
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert stderr == ""



ENTRY = """@article{doe2021,
  title={Sparse Tensor Factorization on Many-Core Processors},
  author={Doe, Jane and Roe, Richard},
  journal={Journal of Parallel Computing},
  year={2021},
}
"""


def test_remove_finds_what_the_file_made_after_it_changed_and_after_it_is_gone(tmp_path: Path) -> None:
    """Records name the file each entry was read from: `remove` takes out an entry corrected in the
    file since (no longer matched by reading it), one deleted from it, and, with the file gone, all
    of them; another file's entry with the same key is told apart and stays."""
    data_dir = link_model_cache(tmp_path / "data")
    mine, theirs = tmp_path / "mine.bib", tmp_path / "theirs.bib"
    dropped = ENTRY.replace("doe2021", "doe2020").replace("Sparse Tensor Factorization on Many-Core Processors",
                                                        "Learned Index Structures for Spatial Data")
    mine.write_text(ENTRY + dropped, encoding="utf-8")
    theirs.write_text(ENTRY, encoding="utf-8")
    assert paperbot_here("ingest", str(mine), str(theirs), data_dir=data_dir).code == 0
    mine.write_text(ENTRY.replace("Many-Core", "Manycore"), encoding="utf-8")  # corrected, the other entry deleted

    changed = paperbot_here("remove", "--source", str(mine), "--dry-run", "--json", data_dir=data_dir)
    assert changed.code == 0, changed.stderr
    report = changed.json()
    assert len(report["removed"]) == 1 and report["not_indexed"] == 0  # the deleted entry's record
    [kept] = report["kept"]  # the corrected entry's record, which theirs.bib describes too
    assert kept["other_sources"] == ["bibtex doe2021"]

    mine.unlink()
    gone = paperbot_here("remove", "--source", str(mine), data_dir=data_dir)
    assert gone.code == 0, gone.stderr
    assert gone.stdout.startswith(f"Removed 1 records of {mine}; kept 1 that other sources describe too.")
    assert f"{mine} no longer exists: its records were found by the file name they carry." in gone.stdout
    [record] = [line for line in paperbot_here("export", data_dir=data_dir).stdout.splitlines() if line]
    assert str(theirs.resolve()) in record and str(mine.resolve()) not in record

    again = paperbot_here("remove", "--source", str(mine), data_dir=data_dir)
    assert again.code == 2 and "No such file, and no indexed record names it" in again.stderr


def test_ingest_lists_what_a_file_no_longer_holds_and_prune_takes_it_out(tmp_path: Path) -> None:
    data_dir = link_model_cache(tmp_path / "data")
    bib = tmp_path / "mine.bib"
    dropped = ENTRY.replace("doe2021", "doe2020").replace("Sparse Tensor Factorization on Many-Core Processors",
                                                        "Learned Index Structures for Spatial Data")
    bib.write_text(ENTRY + dropped, encoding="utf-8")
    assert paperbot_here("ingest", str(bib), data_dir=data_dir).code == 0
    bib.write_text(ENTRY, encoding="utf-8")

    listed = paperbot_here("ingest", str(bib), data_dir=data_dir)
    assert listed.code == 0, listed.stderr
    assert ("1 records were made from entries these files no longer hold (deleted or renamed since); they stay "
            "indexed: `paperbot ingest --prune` with the same files takes them out") in listed.stdout
    stats = paperbot_here("stats", "--json", data_dir=data_dir).json()
    assert stats["papers"] == 2 and stats["by_file"] == {str(bib.resolve()): 2}

    pruned = paperbot_here("ingest", str(bib), "--prune", "--json", data_dir=data_dir)
    assert pruned.code == 0, pruned.stderr
    report = pruned.json()
    assert len(report["pruned"]) == 1 and report["pruned"] == report["no_longer_in_files"]
    assert report["unchanged"] == 1 and report["pruned_kept"] == []
    stats = paperbot_here("stats", "--json", data_dir=data_dir).json()
    assert stats["papers"] == 1 and stats["by_file"] == {str(bib.resolve()): 1}
    assert f"By file:    {bib.resolve()} 1" in paperbot_here("stats", data_dir=data_dir).stdout
