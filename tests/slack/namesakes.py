"""Made-up paper records with namesakes, for the "one person, one profile" door tests.

Invented for these tests (no real person is meant); written so that any sensible author
disambiguation keeps the namesakes apart: no co-author in common, different affiliations,
distant topics. As in any real index, other people share the family names (a "Tong Zhang", a
"Jan Fischer"), so "Zhang" and "Fischer" are not names only one person could carry.

* "Wei Zhang" is two comparable people: three photonics papers at MIT (2019-2021) and three
  boreal-ecology papers at the University of Oslo (2022-2024). Summarizing the name asks which.
* "Lena Fischer" is one prolific person (six papers on graph neural networks for molecules,
  TU Munich, 2018-2023) and two namesakes with one paper each (medieval manuscripts in Bergen,
  2016; coral reef acoustics in Townsville, 2021). Summarizing the name answers for the first and
  names the other two.

Also used by ``tests/cli`` (the same scenario through the command line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MIT = "Massachusetts Institute of Technology"
OSLO = "University of Oslo"
TUM = "Technical University of Munich"
BERGEN = "University of Bergen"
JCU = "James Cook University, Townsville"


def _paper(title: str, year: int, authors: list[tuple[str, str]], abstract: str, venue: str) -> dict[str, Any]:
    return {
        "title": title,
        "published": str(year),
        "venue": venue,
        "abstract": abstract,
        "authors": [{"name": name, "affiliations": [where]} for name, where in authors],
    }


PHOTONICS_WEI = [
    _paper("Low-loss silicon nitride waveguides for chip-scale optical interconnects", 2019,
           [("Wei Zhang", MIT), ("Ann Lee", MIT), ("Bo Chen", MIT)],
           "We fabricate silicon nitride waveguides with propagation losses below 0.1 dB/cm and use them "
           "to build chip-scale optical interconnects for data-center transceivers.", "Optics Express"),
    _paper("Thermally tuned microring modulators for wavelength-division multiplexed links", 2020,
           [("Ann Lee", MIT), ("Wei Zhang", MIT)],
           "Microring resonator modulators with integrated heaters are locked to the laser comb lines of a "
           "wavelength-division multiplexed photonic link operating at 100 Gb/s per channel.", "Optica"),
    _paper("Co-packaged photonic engines for switch ASICs", 2021,
           [("Bo Chen", MIT), ("Ann Lee", MIT), ("Wei Zhang", MIT)],
           "We co-package silicon photonic engines with a switch ASIC, reducing the energy per bit of the "
           "optical interconnect and the electrical trace length to millimetres.", "J. Lightwave Technol."),
]

ECOLOGY_WEI = [
    _paper("Moose browsing pressure shapes boreal forest regeneration", 2022,
           [("Kari Nordmann", OSLO), ("Wei Zhang", OSLO), ("Tong Zhang", OSLO)],
           "Field plots across Norwegian boreal forests show that moose browsing suppresses the regeneration "
           "of rowan, aspen and willow, shifting stands towards spruce dominance.", "Journal of Ecology"),
    _paper("Snow cover duration and the phenology of boreal understorey plants", 2023,
           [("Wei Zhang", OSLO), ("Ola Hansen", OSLO)],
           "Twenty years of snow cover records and flowering dates of bilberry and cowberry reveal earlier "
           "phenology of understorey plants in boreal forests after short winters.", "Oikos"),
    _paper("Lichen recovery after reindeer grazing exclusion", 2024,
           [("Ola Hansen", OSLO), ("Kari Nordmann", OSLO), ("Wei Zhang", OSLO)],
           "Fenced exclosures in northern Norway let ground lichens recover within a decade after reindeer "
           "grazing stopped, with consequences for winter forage.", "Ecography"),
]

GNN_LENA = [
    _paper(title, year, [("Lena Fischer", TUM), *coauthors], abstract, venue)
    for title, year, coauthors, abstract, venue in [
        ("Message passing neural networks for molecular property prediction", 2018,
         [("Jonas Weber", TUM)],
         "Graph neural networks that pass messages along chemical bonds predict quantum-chemical "
         "properties of small molecules close to density functional theory accuracy.", "NeurIPS"),
        ("Equivariant graph networks for interatomic potentials", 2019,
         [("Jonas Weber", TUM), ("Mia Schulz", TUM)],
         "Rotation-equivariant graph neural networks learn interatomic potentials for molecular dynamics "
         "simulations with fewer training structures.", "ICML"),
        ("Graph transformers for reaction yield prediction", 2020,
         [("Mia Schulz", TUM), ("Jan Fischer", TUM)],
         "A graph transformer over reactant molecules predicts the yield of chemical reactions and "
         "transfers across reaction classes.", "ICLR"),
        ("Self-supervised pretraining of molecular graph encoders", 2021,
         [("Jonas Weber", TUM)],
         "Masked atom and bond prediction pretrains molecular graph neural networks on ten million "
         "unlabelled molecules before fine-tuning on property prediction.", "NeurIPS"),
        ("Uncertainty estimates for graph neural network property predictors", 2022,
         [("Mia Schulz", TUM), ("Jonas Weber", TUM)],
         "Deep ensembles and evidential heads give calibrated uncertainty for graph neural network "
         "predictions of molecular properties in active learning loops.", "ICML"),
        ("Generative graph models for drug-like molecules", 2023,
         [("Jonas Weber", TUM)],
         "An autoregressive graph neural network generates drug-like molecules that satisfy property "
         "constraints for virtual screening.", "ICLR"),
    ]
]

OTHER_LENAS = [
    _paper("Scribal hands in thirteenth-century Norse legal manuscripts", 2016,
           [("Lena Fischer", BERGEN), ("Ingrid Solheim", BERGEN)],
           "Palaeographic analysis of letter forms identifies four scribal hands in Old Norse law codes "
           "copied in Bergen around 1270.", "Scandinavian Studies"),
    _paper("Passive acoustic monitoring of coral reef fish choruses", 2021,
           [("Tom Baker", JCU), ("Lena Fischer", JCU)],
           "Hydrophones on the Great Barrier Reef record dawn and dusk fish choruses whose intensity tracks "
           "coral cover after bleaching events.", "Marine Ecology Progress Series"),
]

RECORDS = PHOTONICS_WEI + ECOLOGY_WEI + GNN_LENA + OTHER_LENAS

# what the tests check against
AMBIGUOUS_NAME = "Wei Zhang"
DOMINANT_NAME = "Lena Fischer"
DOMINANT_PAPERS = len(GNN_LENA)
DOMINANT_TITLES = [paper["title"] for paper in GNN_LENA]


def write_records(path: Path) -> Path:
    """The records as JSON lines (paperbot's own exchange format) at ``path``."""
    path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    return path
