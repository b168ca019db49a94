"""What an index returns for questions it was not built for: the baseline a real answer must clear.

Over a large index some record always resembles a question a little; over a small one hardly
any does. The same cosine therefore means "on topic" in one index and "nothing better was
there" in another. ``measure_background`` asks the index a fixed bank of questions on every
field of scholarship (``retrieval/answers/data/background_questions.txt``, written before any
tuning) and keeps the distribution of the best dense cosine each gets: the evidence judgement
(``retrieval.answers.judgement``) reads a question's best cosine against it.

The figures are kept in the data dir (``evidence-background.json``) and reused while the encoder
is the same and the record count has not moved by more than ``REMEASURE_SHARE``; a read-only
data dir gets them measured in memory once per process, never an error.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from retrieval.index.paper_index import PaperIndex

log = logging.getLogger(__name__)

BACKGROUND_FILE = "evidence-background.json"
REMEASURE_SHARE = 0.1  # a count that moved by more than this share is measured again
FORMAT = 1


@dataclass(frozen=True)
class Background:
    """The best dense cosine this index gives to questions it was not built for.

    ``median`` and ``high`` (the 90th percentile) over the background questions; ``records``
    and ``encoder`` say which index state they describe.
    """

    median: float
    high: float
    records: int
    encoder: str
    questions: int

    def fits(self, records: int, encoder: str) -> bool:
        """True while these figures still describe an index of ``records`` records made by ``encoder``."""
        if encoder != self.encoder:
            return False
        return abs(records - self.records) <= REMEASURE_SHARE * max(self.records, 1)


#: An index with no record: nothing matches anything.
EMPTY = Background(median=0.0, high=0.0, records=0, encoder="", questions=0)


def background_questions() -> list[str]:
    """The bank of questions on every field (comment lines and blank lines left out)."""
    text = resources.files("retrieval.answers").joinpath("data/background_questions.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def measure(index: PaperIndex) -> Background:
    """Ask ``index`` every background question (dense retrieval, best record only) and summarise."""
    records = index.count()
    encoder = index.encoder
    if records == 0:
        return EMPTY
    questions = background_questions()
    vectors = np.asarray(encoder.encode(questions), dtype=np.float32)
    best = []
    for vector in vectors:
        nearest = index.dense.query(vector, 1)
        best.append(nearest[0][1] if nearest else 0.0)
    values = np.asarray(best, dtype=np.float64)
    return Background(median=round(float(np.median(values)), 4), high=round(float(np.percentile(values, 90)), 4),
                      records=records, encoder=encoder.name, questions=len(questions))


def _read(path: Path) -> Background | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.pop("format", None) != FORMAT:
            return None
        return Background(**raw)
    except (OSError, ValueError, TypeError):
        return None


def _write(path: Path, background: Background) -> None:
    try:
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"format": FORMAT, **asdict(background)}), encoding="utf-8")
        temporary.replace(path)
    except OSError as error:  # a read-only data dir: measured again by the next process
        log.debug("background figures not kept (%s)", error)


class BackgroundCache:
    """The index's background figures: read from the data dir, else measured (and kept when it can)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / BACKGROUND_FILE
        self._lock = threading.Lock()
        self._known: Background | None = None

    def of(self, index: PaperIndex) -> Background:
        """Figures that fit ``index`` as it is now (measured at most once per change of state)."""
        records = index.count()
        if records == 0:
            return EMPTY
        encoder = index.encoder.name
        with self._lock:
            if self._known is not None and self._known.fits(records, encoder):
                return self._known
            stored = _read(self._path)
            if stored is None or not stored.fits(records, encoder):
                stored = measure(index)
                _write(self._path, stored)
            self._known = stored
            return stored
