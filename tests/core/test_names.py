"""Initials-aware name comparison."""

import pytest

from retrieval.names import names_compatible, parse_name


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Z. Zhang", "Zhao Zhang", True),
        ("Zhang, Zhao", "Zhao Zhang", True),
        ("Tong Zhang", "Zhao Zhang", False),
        ("T. Zhang", "Zhao Zhang", False),
        ("Luanzheng Guo", "L. Guo", True),
        ("Ludwig van Beethoven", "Beethoven, L. van", True),
        ("J.-P. Sartre", "Jean-Paul Sartre", True),
        ("Jean Paul Sartre", "Jean Pierre Sartre", False),
        ("Stefano Zampini", "Zampini, Stefano", True),
        ("Barry Smith", "Barry F. Smith", True),
        ("Smith", "Barry Smith", True),
        ("Jed Brown", "Jed Smith", False),
    ],
)
def test_names_compatible(a, b, same):
    assert names_compatible(a, b) is same
    assert names_compatible(b, a) is same


def test_parse_name_handles_suffixes_and_accents():
    name = parse_name("Gonz\u00e1lez, Jr., Jos\u00e9")
    assert name.family == "gonzalez" and name.given == ("jose",)
    assert parse_name("Zhao Zhang").key == "zhang z"
