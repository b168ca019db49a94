"""Made-up publication-list records for the listing tests (issue #13), no real person meant.

As in real publication lists, most entries carry no abstract:

* "Zhao Zhang": nine title-only papers on HPC storage and checkpointing, 2023-2026, written
  "Zhao Zhang", "Z. Zhang" and, once, family first "Zhang, Zhao"; nobody else is a Zhang.
* "Luanzheng Guo": three papers, two recent (2025, 2026; one with an abstract), one old (2019).
* Unrelated records, some old and off-topic: a 1961 "N-dimensional codes for detecting
  errors", surface plasmons, moose browsing. Their authors share no family name above.

Also used by the CLI and Slack tests, which ingest ``write_records(path)`` as JSONL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ZHAO = "Zhao Zhang"
GUO = "Luanzheng Guo"


def _paper(title: str, published: str, authors: list[str], venue: str | None = None,
           abstract: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"title": title, "published": published, "authors": [{"name": n} for n in authors]}
    if venue:
        row["venue"] = venue
    if abstract:
        row["abstract"] = abstract
    return row


ZHAO_PAPERS = [
    _paper("Asynchronous checkpointing for exascale simulations", "2026-03", ["Zhao Zhang", "Ivo Petrov"], "SC"),
    _paper("Elastic deep learning training on HPC schedulers", "2026-01", ["Z. Zhang", "Mara Quist"], "IPDPS"),
    _paper("Burst buffer aware I/O scheduling", "2025-11", ["Zhao Zhang"], "HPDC"),
    _paper("Lossy compression of checkpoint data", "2025-06", ["Ivo Petrov", "Zhang, Zhao"], "Cluster"),
    _paper("Metadata services for billion-file workloads", "2025-02", ["Zhao Zhang", "Ana Ruiz"]),
    _paper("Scalable data loaders for scientific machine learning", "2024-09", ["Zhao Zhang"], "SC"),
    _paper("Container images at scale on supercomputers", "2024-03", ["Z. Zhang", "Ana Ruiz"], "CCGrid"),
    _paper("Fault injection for parallel file systems", "2023-10", ["Zhao Zhang", "Mara Quist"], "FAST"),
    _paper("Characterizing small-file I/O in deep learning", "2023-04", ["Zhao Zhang"], "IISWC"),
]

GUO_PAPERS = [
    _paper("Resilience of LLM inference to hardware errors", "2026-05", ["Luanzheng Guo", "Ivo Petrov"], "DSN"),
    _paper("Fault tolerance for large language model serving", "2025-08", ["Luanzheng Guo", "Ana Ruiz"], "SC",
           "We study how transient hardware faults propagate through large language model serving. "
           "Selective recomputation recovers most corrupted tokens at low cost."),
    _paper("Soft error propagation in iterative solvers", "2019-07", ["Luanzheng Guo"], "ICS"),
]

OTHER_PAPERS = [
    _paper("N-dimensional codes for detecting errors", "1961", ["Peter Calabi"], "Bell System Technical Journal"),
    _paper("Surface plasmon resonance in gold nanorods", "2024-05", ["Hana Okafor", "Jon Ekdahl"], "Nano Letters",
           "Gold nanorods support longitudinal surface plasmon resonances. We map their dependence on aspect ratio."),
    _paper("Moose browsing shapes boreal forest regeneration", "2025-04", ["Kari Nordmann"], "Journal of Ecology",
           "Field plots show that moose browsing suppresses the regeneration of rowan and aspen."),
    _paper("Error-correcting codes for magnetic tape", "1972", ["Peter Calabi", "Jon Ekdahl"]),
    _paper("A survey of checkpoint restart techniques", "2018-02", ["Mara Quist"], "ACM Computing Surveys",
           "We survey application-level and system-level checkpoint restart techniques for HPC."),
]

RECORDS = ZHAO_PAPERS + GUO_PAPERS + OTHER_PAPERS


def write_records(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(row) for row in RECORDS) + "\n", encoding="utf-8")
    return path
