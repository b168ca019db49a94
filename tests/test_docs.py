"""The documentation holds together: the README starts with the two commands (the test one is
what `.ci/run` runs) and stays a short page for users, every relative link of the Markdown pages
reaches a file and, with a ``#fragment``, a heading of it, and every setting is documented in
docs/configuration.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install --no-compile -e . && .venv/bin/paperbot demo"
TEST_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -q --no-compile -e '.[test]' && .venv/bin/ruff check . "
                "&& .venv/bin/mypy && .venv/bin/python -m pytest")
README_MAX_LINES = 300

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md"]
    return pages + sorted((ROOT / "docs").rglob("*.md"))


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    text = page.read_text(encoding="utf-8")
    anchors.update(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        slug = _slug(line.lstrip("#"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = _code_blocks(readme)
    assert blocks[0].strip() == DEMO_COMMAND
    assert blocks[1].strip() == TEST_COMMAND
    before_first = readme.split("```", 1)[0]
    assert "## " not in before_first.split("\n", 1)[1], "the two commands come before any section"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci


def test_readme_is_a_short_page_for_users():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES


def test_every_relative_link_reaches_a_file_and_its_heading():
    broken = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # a URL or mailto:, not checked offline
            path_part, _, fragment = target.partition("#")
            destination = (page.parent / path_part).resolve() if path_part else page
            if not destination.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and destination.suffix == ".md" and fragment not in _anchors(destination):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_setting_is_documented_in_the_configuration_page():
    from pydantic import AliasChoices

    from retrieval.config import Settings

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = []
    for name, field in Settings.model_fields.items():
        assert isinstance(field.validation_alias, AliasChoices), f"{name} has no environment variable"
        variable = field.validation_alias.choices[0]
        if f"`{variable}`" not in page:
            missing.append(variable)
    assert missing == []
