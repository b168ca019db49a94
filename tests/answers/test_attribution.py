"""Citations that point at the wrong record: a valid number is not yet a correct one."""

from __future__ import annotations

import pytest

from retrieval.answers.attribution import EvidenceAttribution
from retrieval.answers.citations import validate_answer
from retrieval.answers.model_output import miscites
from retrieval.records.paper import Author, Paper

RECORDS = [
    ("The discrete dipole approximation: an overview and recent developments", ""),
    ("Convergence of the discrete dipole approximation. I. Theoretical analysis", ""),
    ("Checkpointing strategies for fine-tuning large language models",
     "We save optimizer state asynchronously to cut stalls during LLM fine-tuning."),
    ("A learned sparse index for scientific search", "Sparse lexical retrieval with learned term weights."),
]
ATTRIBUTION = EvidenceAttribution(RECORDS)


def test_a_sentence_naming_another_records_title_is_misattributed() -> None:
    sentence = "Convergence of the discrete dipole approximation is given a theoretical analysis [1]."
    assert ATTRIBUTION.misattributed(sentence, [1]) == 2
    assert ATTRIBUTION.misattributed(sentence, [2]) is None


def test_a_sentence_sharing_nothing_with_its_record_but_much_with_another_is_misattributed() -> None:
    sentence = "It saves optimizer state asynchronously to avoid stalls [4]."
    assert ATTRIBUTION.misattributed(sentence, [4]) == 3
    assert ATTRIBUTION.misattributed(sentence, [3]) is None


def test_topic_words_shared_by_the_cited_record_never_decide() -> None:
    # both dipole records hold "discrete dipole approximation": citing either is not wrong
    sentence = "The discrete dipole approximation is studied in depth [1]."
    assert ATTRIBUTION.misattributed(sentence, [1]) is None
    assert ATTRIBUTION.misattributed(sentence, [2]) is None


def test_vague_sentences_and_sentences_citing_both_records_are_left_alone() -> None:
    assert ATTRIBUTION.misattributed("This line of work matters [2].", [2]) is None
    both = "Checkpointing for LLM fine-tuning and a learned sparse index are both covered [3][4]."
    assert ATTRIBUTION.misattributed(both, [3, 4]) is None
    assert ATTRIBUTION.misattributed("Anything at all [9].", [9]) is None  # out of range: not judged here


def test_validation_drops_a_miscited_claim_and_keeps_the_rest() -> None:
    text = ("Checkpointing strategies for fine-tuning large language models are proposed [4]. "
            "A learned sparse index serves scientific search [4].")
    report = validate_answer(text, 4, attribution=ATTRIBUTION)
    assert [d.reason for d in report.dropped] == ["wrong citation"]
    assert report.text == "A learned sparse index serves scientific search [1]."
    assert report.order == (4,)
    assert not miscites(report)  # one slip: the rest of the reply stands


def test_a_list_numbered_reply_whose_numbers_are_shifted_miscites() -> None:
    # a small model's list: positions 1..3, each [k] one off from the record it names
    text = ("1. The discrete dipole approximation: an overview and recent developments [2]\n"
            "2. Convergence of the discrete dipole approximation, a theoretical analysis [3]\n"
            "3. Checkpointing strategies for fine-tuning large language models [4]")
    report = validate_answer(text, 4, attribution=ATTRIBUTION)
    assert sum(d.reason == "wrong citation" for d in report.dropped) >= 2
    assert miscites(report)


def test_without_attribution_validation_is_unchanged() -> None:
    text = "Convergence of the discrete dipole approximation is given a theoretical analysis [1]."
    assert validate_answer(text, 2).text == text


# --- what the cited records support -----------------------------------------------------------

AUTHORED = EvidenceAttribution(
    [("Content-based recommender systems: state of the art and trends",
      "We survey content-based recommendation: item representations, user profiles and filtering."),
     ("Collaborative filtering with matrix factorization", "Latent factor models for rating prediction."),
     ("Markov chains for session-based recommendation", "Sequential models of user sessions.")],
    [["Lops", "de Gemmis", "Semeraro"], ["Koren", "Bell"], ["Long", "Chen"]],
)


@pytest.mark.parametrize(("sentence", "cited", "reason"), [
    # the examples: words shared with a record on light scattering at most by chance
    ("The cited work proves that P equals NP and that unit tests are obsolete [1].", [1], "unsupported"),
    ("It also shows vaccines cause autism [2].", [2], "unsupported"),
    ("The cited work proves this [1].", [1], "says nothing"),
    ("These papers are relevant to the question [1][2].", [1, 2], "says nothing"),
    # paraphrases keep their support: "theory"/"theoretical", "analyses"/"analysis"
    ("The theory paper analyses convergence [2].", [2], None),
    ("An overview of recent developments of the method is given [1].", [1], None),
])
def test_a_claim_must_hold_the_key_terms_of_the_records_it_cites(sentence: str, cited: list[int],
                                                                   reason: str | None) -> None:
    assert ATTRIBUTION.unsupported(sentence, cited) == reason


@pytest.mark.parametrize(("sentence", "cited", "reason"), [
    ("Lops et al. survey content-based recommendation [1].", [1], None),
    ("Lops et al. survey content-based recommendation [2].", [2], "wrong author"),  # renumbered to Koren's
    ("Koren and Bell factorize the rating matrix [1].", [1], "wrong author"),
    ("Smith et al. survey content-based recommendation [1].", [1], "wrong author"),  # nobody in the evidence
    ("Long sessions are modelled sequentially [3].", [3], None),  # a sentence's first word names nobody
    ("Markov chains model user sessions [3].", [3], None),
])
def test_a_named_author_is_credited_only_with_a_record_they_wrote(sentence: str, cited: list[int],
                                                                    reason: str | None) -> None:
    assert AUTHORED.unsupported(sentence, cited) == reason


def test_validation_drops_unsupported_and_misattributed_claims_and_says_why() -> None:
    text = ("Lops et al. survey content-based recommendation [1]. Lops et al. also factorize ratings [2]. "
            "The cited work proves that P equals NP [2].")
    report = validate_answer(text, 3, attribution=AUTHORED)
    assert report.text == "Lops et al. survey content-based recommendation [1]."
    assert [d.reason for d in report.dropped] == ["wrong author", "unsupported"]


def test_authors_are_read_from_the_papers() -> None:
    paper = Paper(title="Content-based recommender systems", published="2011", abstract="A survey.",
                  authors=[Author(name="Pasquale Lops"), Author(name="de Gemmis, Marco")])
    other = Paper(title="Matrix factorization", published="2009", authors=[Author(name="Yehuda Koren")])
    attribution = EvidenceAttribution.from_papers([paper, other])
    assert attribution.unsupported("Gemmis and Lops survey recommender systems [1].", [1]) is None
    assert attribution.unsupported("Lops et al. describe matrix factorization [2].", [2]) == "wrong author"


def test_a_venue_or_byline_copied_from_a_reference_list_says_nothing() -> None:
    # a real 1.5B model answered "X's work since 2022" with a numbered reference list; split at its
    # periods, the venue lines kept valid citations and were shown as the answer
    papers = [Paper(title="Denoising Diffusion Restoration Models", published="2022", venue="Neural Information "
                    "Processing Systems", authors=[Author(name="Bahjat Kawar"), Author(name="Jiaming Song")]),
              Paper(title="Pseudoinverse-Guided Diffusion Models for Inverse Problems", published="2023",
                    venue="International Conference on Learning Representations",
                    abstract="We solve linear inverse problems with a pretrained diffusion model.",
                    authors=[Author(name="Jiaming Song")])]
    attribution = EvidenceAttribution.from_papers(papers)
    assert attribution.unsupported("International Conference on Learning Representations [2].", [2]) == "says nothing"
    assert attribution.unsupported("Neural Information Processing Systems [1].", [1]) == "says nothing"
    assert attribution.unsupported("Song et al. solve linear inverse problems at ICLR [2].", [2]) is None
    assert attribution.unsupported("Denoising diffusion restores images [1].", [1]) is None
    reply = ("[1] Bahjat Kawar and Jiaming Song. Denoising Diffusion Restoration Models. Neural Information "
             "Processing Systems [1].\nInternational Conference on Learning Representations [2].")
    report = validate_answer(reply, 2, attribution=attribution)
    assert "Conference" not in report.text and "Neural Information" not in report.text
