"""``bench/roundtrip.py --quick``, run as a user runs it (a subprocess), checked against its goals.

It reads real publication lists under ``../shared`` (never copied into the
tree), so it is skipped, with the reason printed in pytest's summary, where those are absent.
The figures must be consistent counts; then the issue's goals, one test each, so a failure names
the goal: identical ids, 100 % of stored fields, >= 99 % of keys, a link for every entry whose
source carries an identifier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
PETSC = SHARED / "fixtures" / "bibtex" / "petsc_doc_petsc.bib"
SCHOLARS = SHARED / "datasets" / "scholars-real" / "bib"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (PETSC.exists() and SCHOLARS.is_dir()),
                       reason=f"{PETSC} or {SCHOLARS} not found: the round-trip benchmark needs them"),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, int]:
    out = tmp_path_factory.mktemp("bench-out") / "roundtrip.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "bench/roundtrip.py", "--quick", "--shared", str(SHARED), "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a goal failed (the tests below say which)
    assert not (out.parent / "roundtrip-scratch").exists()  # scratch data dirs removed without --keep
    return json.loads(out.read_text(encoding="utf-8")), done.stdout, done.returncode


def test_the_report_is_printed_and_the_exit_status_follows_the_goals(run):
    figures, output, code = run
    assert figures["quick"] is True and figures["files"] == 8
    for label in ("ids of A found in B", "(record, field) pairs identical", "keys identical E1 -> E2",
                  "user keys kept in E1", "entries carrying an id with a link, reader", "baseline"):
        assert label in output, label
    assert code == (1 if figures["failed_goals"] else 0)
    assert set(figures["seconds"]) >= {"ingest A", "export A", "ingest B", "export B"}
    for name in ("E1", "E2"):
        assert Path(figures["exports"][name]).read_text(encoding="utf-8").startswith("@")


def test_figures_are_consistent_counts(run):
    figures = run[0]
    rec, keys, entries = figures["records"], figures["keys"], figures["links"]["entries"]
    assert rec["records_A"] > 600 and rec["common"] <= min(rec["records_A"], rec["records_B"])
    assert rec["only_A_count"] == rec["records_A"] - rec["common"]
    assert 0 <= rec["fields"]["identical"] <= rec["fields"]["pairs"]
    assert sum(rec["fields"]["mismatches"].values()) == rec["fields"]["pairs"] - rec["fields"]["identical"]
    assert rec["fields"]["records_identical"] <= rec["common"]
    assert keys["identical"] <= keys["common"] and keys["user_keys_kept"] <= keys["user_keys"] <= rec["records_A"]
    assert entries["records"] + entries["no_record"] == entries["entries"]
    assert entries["carrying_linked"] <= entries["carrying"] <= entries["records"]
    assert entries["carrying_baseline_linked"] <= entries["carrying"]
    # the reader looks further than the doi/url/eprint baseline, never less far
    assert entries["with_link"] >= entries["baseline_with_link"]
    assert len(entries["misses"]) == min(10, entries["carrying"] - entries["carrying_linked"])
    for linked, total in (figures["links"]["A"], figures["links"]["B"]):
        assert 0 <= linked <= total


def test_goal_ids_identical(run):
    rec = run[0]["records"]
    assert rec["only_A_count"] == 0 and rec["only_B_count"] == 0, (rec["id_changes"], rec["only_B"])


def test_goal_every_stored_field_survives(run):
    fields = run[0]["records"]["fields"]
    assert fields["share"] == 1.0, (fields["mismatches"], fields["examples"])


def test_goal_keys(run):
    keys = run[0]["keys"]
    assert keys["share"] >= 0.99, keys["changed"]


def test_goal_every_entry_carrying_an_id_gets_a_link(run):
    entries = run[0]["links"]["entries"]
    assert entries["carrying_linked"] == entries["carrying"], (entries["miss_fields"], entries["misses"])
