"""LaTeX -> Unicode: accents, symbols, math, escapes, and hostile input that must not raise."""

from __future__ import annotations

import pytest

from retrieval.sources.markup.latex import latex_to_text, latex_to_verbatim


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        ("Lemar{\\'e}chal", "Lemaréchal"),
        ("\\'{e}t\\'e", "été"),
        ('{\\"O}zg{\\"u}ner', "Özgüner"),
        ("Fran\\c{c}ois and Fran\\c cois", "François and François"),
        ("Soused{\\'\\i}k", "Sousedík"),
        ("Bed{\\v{r}}ich Bozda{\\u{g}}", "Bedřich Bozdağ"),
        ("Gro\\ss e Stra\\ss{}e", "Große Straße"),
        ("\\AA ngstr\\\"om \\o{}rsted \\L\\'od\\'z", "Ångström ørsted Łódź"),
        ("pages 1--2, a---b", "pages 1–2, a—b"),
        ("C.~E. Acar", "C. E. Acar"),
        ("``quoted''", "“quoted”"),
        ("{PETSc} {{Protected}}", "PETSc Protected"),
        ("\\& \\% \\_ \\# \\$", "& % _ # $"),
        ("50% off & more", "50% off & more"),
        ("$\\alpha$-stable", "α-stable"),
        ("$O(n^2)$ and $x_{10}$", "O(n²) and x₁₀"),
        ("{$\\mathcal H$}-matrices", "ℋ-matrices"),
        ("The {\\tt WEB} system", "The WEB system"),
        ("\\emph{very} \\textbf{bold}", "very bold"),
        ("see \\url{https://x.org/a}", "see https://x.org/a"),
        ("\\href{https://x.org}{the site}", "the site"),
        ("plain text stays", "plain text stays"),
    ],
)
def test_latex_to_text(latex: str, text: str) -> None:
    assert latex_to_text(latex) == text


def test_tilde_can_stay_literal_for_arxiv_text() -> None:
    assert latex_to_text("~5 K at $T$~0", tilde_is_space=False) == "~5 K at T~0"
    assert latex_to_text("~5 K", tilde_is_space=True) == "5 K"


def test_long_abstract_with_math_keeps_plain_words() -> None:
    abstract = "We show that $\\rho \\lambda^3 \\gg 1$ holds for {\\it all} cases,\nwith 10% error."
    assert latex_to_text(abstract) == "We show that ρλ³ ≫ 1 holds for all cases, with 10% error."


@pytest.mark.parametrize(
    "hostile",
    [
        "{" * 500 + "x",
        "}" * 50,
        "$",
        "$$",
        "\\",
        "\\begin{x}",
        "\\href{u}",
        "\\'",
        "%{\\x",
        "{" * 70 + "}" * 70,
    ],
)
def test_hostile_input_never_raises(hostile: str) -> None:
    assert isinstance(latex_to_text(hostile), str)


@pytest.mark.parametrize(
    ("latex", "verbatim"),
    [
        (
            "http://mip.ups-tlse.fr/\\~{ }saut/data/sisc04.pdf",
            "http://mip.ups-tlse.fr/~saut/data/sisc04.pdf",
        ),
        ("\\url{https://x.org/a\\_b?c=1\\&d}", "https://x.org/a_b?c=1&d"),
        ("https://x.org/~user", "https://x.org/~user"),
        ("10.1137/ 1.9781611974546", "10.1137/1.9781611974546"),
    ],
)
def test_latex_to_verbatim(latex: str, verbatim: str) -> None:
    assert latex_to_verbatim(latex) == verbatim
