"""Rebuild the bundled sample corpus from the CC0 arXiv metadata in ../shared/fixtures/arxiv/.

    python scripts/build_sample.py [--shared ../shared] [--oai-records 300]

Writes retrieval/sample/arxiv_sample.jsonl: one Paper record per line, merged and deduplicated,
from (1) the recorded arXiv API "testing" query (recent software-testing and statistics papers),
(2) the first 200 records of the arXiv metadata snapshot, and (3) the first N records of the
quant-ph OAI-PMH harvest. arXiv metadata is CC0; the file must stay under 5 MB.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from retrieval.records.merge import dedupe
from retrieval.records.paper import Paper
from retrieval.sources.files.detect import parse_file
from retrieval.sources.providers.arxiv import parse_atom

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "retrieval" / "sample" / "arxiv_sample.jsonl"
LIMIT_BYTES = 5 * 1024 * 1024


def _undo_mojibake(body: str) -> bytes:
    """The recorder decoded UTF-8 bytes as Latin-1 ("VÃ¢nia"); recover the real bytes."""
    try:
        raw = body.encode("latin-1")
        raw.decode("utf-8")
        return raw
    except (UnicodeEncodeError, UnicodeDecodeError):
        return body.encode("utf-8")


def recorded_atom_papers(folder: Path) -> list[Paper]:
    papers: list[Paper] = []
    for path in sorted(folder.glob("*.json")):
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded.get("status_code") != 200:
            continue
        papers.extend(parse_atom(_undo_mojibake(recorded["body"])).papers)
    return papers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--oai-records", type=int, default=300)
    args = parser.parse_args()
    arxiv = args.shared / "fixtures" / "arxiv"
    papers = recorded_atom_papers(arxiv / "recorded_2026")
    papers += parse_file(arxiv / "arxiv-metadata-oai-snapshot_head200.jsonl").papers
    papers += parse_file(arxiv / "quant-ph_oai_dc_ListRecords_2000.xml.gz").papers[: args.oai_records]
    unique = [p for p in dedupe(papers) if p.abstract]
    unique.sort(key=lambda p: p.id)
    text = "".join(p.model_dump_json(exclude_none=True, exclude={"id"}) + "\n" for p in unique)
    if len(text.encode("utf-8")) > LIMIT_BYTES:
        raise SystemExit(f"sample would be {len(text) / 1e6:.1f} MB, over the 5 MB limit; lower --oai-records")
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {len(unique)} records ({len(text.encode()) / 1e6:.2f} MB) to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
