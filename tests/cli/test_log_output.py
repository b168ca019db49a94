"""What `paperbot ingest` and `paperbot demo` write to a log: stderr redirected (cron, nohup, CI,
a container).

One real ingest in a subprocess whose stderr is a pipe, with the torch encoder (the one whose
loading drew transformers' "Loading weights" bar) and a short progress interval. When the lines
come is tested on a hand-moved clock (``test_progress_lines.py``); here, what they say. Then the
demo's first run, in this process, on a machine whose encoder is not prepared yet.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrieval.index.encoders import loading
from tests.cli.conftest import Run, paperbot, paperbot_here
from tests.support.model_cache import link_model_cache

pytestmark = pytest.mark.slow  # loads the encoders

RECORDS = 40  # the ``small_corpus``
COUNTED = re.compile(rf"Indexing: (?:done in [^,]+, )?([\d,]+) / {RECORDS} records \(\d+ %\)")
BEFORE_THE_COUNT = re.compile(r"Indexing: \S+( \S+)? elapsed")  # the files are still being read


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, small_corpus: Path) -> Run:
    data_dir = tmp_path_factory.mktemp("log") / "data"
    run = paperbot("ingest", str(small_corpus), "--json", data_dir=data_dir,
                   PAPERBOT_ENCODER="torch", PAPERBOT_PROGRESS_INTERVAL="0.5")
    assert run.code == 0, run.stderr
    return run


def test_progress_lines_count_up_to_the_total(logged: Run) -> None:
    lines = [line for line in logged.stderr.splitlines() if line.startswith("Indexing: ")]
    counted = [line for line in lines if not BEFORE_THE_COUNT.fullmatch(line)]
    counts = [int(match.group(1).replace(",", "")) for line in counted if (match := COUNTED.match(line))]
    assert len(counts) == len(counted), counted  # past the reading, every line gives records done of the total
    # loading the torch encoder alone (inside the indexing) lasts several intervals: lines before the last
    assert len(counted) >= 2
    assert counts == sorted(counts) and counts[-1] == RECORDS > counts[0]
    assert re.fullmatch(rf"Indexing: done in \S+( \S+)?, {RECORDS} / {RECORDS} records \(100 %\), "
                        r"[\d.,]+ records/(s|min)", lines[-1])
    assert "\x1b" not in logged.stderr and "━" not in logged.stderr  # no bar, no terminal codes
    assert logged.json()["added"] == RECORDS  # stdout is the report alone


def test_no_library_progress_bar_reaches_the_log(logged: Run) -> None:
    assert "Loading weights" not in logged.stderr
    assert "it/s]" not in logged.stderr  # any tqdm bar


def test_the_demo_announces_the_encoder_preparation_before_indexing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # this machine's encoder cache is the session's, made already: as if the probe were still to come
    monkeypatch.setattr(loading, "pending_preparation", lambda settings, **_: "measuring which encoder runs "
                        "fastest on this CPU")
    run = paperbot_here("demo", data_dir=link_model_cache(tmp_path / "data"), PAPERBOT_PROGRESS_INTERVAL="3600")
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    announced = [n for n, line in enumerate(lines) if line.startswith(
        "Encoder (0 s): first use on this machine: measuring which encoder runs fastest on this CPU (once; ")]
    indexed = [n for n, line in enumerate(lines) if line.startswith("Indexing sample: done in ")]
    assert len(announced) == 1 and len(indexed) == 1 and announced[0] < indexed[0], lines
    assert "Loading weights" not in run.stderr and "Q: " in run.stdout
