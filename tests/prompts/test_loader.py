"""The prompt loader: placeholders are checked when a template is loaded, not when it is used."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.prompts import ChatPromptTemplate

from prompts import PROMPT_DIR, PromptError, load_prompt, placeholders

SHIPPED = {
    "answer_system": set(),
    "answer_user": {"boundary", "question", "evidence"},
    "condense_question": {"boundary", "history", "question"},
}


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "fields"), sorted(SHIPPED.items()))
def test_shipped_templates_load_with_their_fields(name: str, fields: set[str]) -> None:
    prompt = load_prompt(name, required=fields)
    assert prompt.fields == fields
    assert prompt.text.strip()


@pytest.mark.parametrize(("name", "fields"), sorted(SHIPPED.items()))
def test_shipped_templates_are_valid_langchain_templates(name: str, fields: set[str]) -> None:
    template = ChatPromptTemplate.from_messages([("human", load_prompt(name, required=fields).text)])
    assert set(template.input_variables) == fields


@pytest.mark.parametrize("path", sorted(PROMPT_DIR.glob("*.txt")), ids=lambda p: p.name)
def test_every_shipped_file_is_well_formed(path: Path) -> None:
    placeholders(path.read_text(encoding="utf-8"))  # raises PromptError on anything malformed


def test_missing_placeholder_raises_at_load(tmp_path: Path) -> None:
    write(tmp_path, "greet", "Hello {name}.")
    with pytest.raises(PromptError, match=r"missing \{place\}"):
        load_prompt("greet", required={"name", "place"}, directory=tmp_path)


def test_extra_placeholder_raises_at_load(tmp_path: Path) -> None:
    write(tmp_path, "greet", "Hello {name} from {place}.")
    with pytest.raises(PromptError, match=r"unexpected \{place\}"):
        load_prompt("greet", required={"name"}, directory=tmp_path)


@pytest.mark.parametrize("bad", ["{}", "{0}", "{a.b}", "{a[0]}", "{a!r}", "{a:>4}"])
def test_only_plain_named_placeholders_are_allowed(tmp_path: Path, bad: str) -> None:
    write(tmp_path, "fancy", f"x {bad} y")
    with pytest.raises(PromptError, match="not a plain"):
        load_prompt("fancy", required={"a"}, directory=tmp_path)


def test_unbalanced_braces_raise(tmp_path: Path) -> None:
    write(tmp_path, "broken", "Hello {name")
    with pytest.raises(PromptError, match="malformed"):
        load_prompt("broken", required={"name"}, directory=tmp_path)


def test_missing_file_names_the_expected_path(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match=r"nothere\.txt"):
        load_prompt("nothere", required=set(), directory=tmp_path)


def test_empty_file_raises(tmp_path: Path) -> None:
    write(tmp_path, "blank", "  \n")
    with pytest.raises(PromptError, match="empty"):
        load_prompt("blank", required=set(), directory=tmp_path)


@pytest.mark.parametrize("name", ["../secrets", "Answer", "a-b", ""])
def test_names_cannot_escape_the_directory(tmp_path: Path, name: str) -> None:
    with pytest.raises(PromptError, match="prompt name"):
        load_prompt(name, required=set(), directory=tmp_path)


def test_escaped_braces_are_literal(tmp_path: Path) -> None:
    write(tmp_path, "json", 'Reply as {{"answer": "..."}} about {topic}.')
    prompt = load_prompt("json", required={"topic"}, directory=tmp_path)
    assert prompt.format(topic="x") == 'Reply as {"answer": "..."} about x.'


def test_format_checks_values_and_does_not_reinterpret_them(tmp_path: Path) -> None:
    write(tmp_path, "q", "Q: {question}")
    prompt = load_prompt("q", required={"question"}, directory=tmp_path)
    assert prompt.format(question="what is {secret}?") == "Q: what is {secret}?"
    with pytest.raises(PromptError, match=r"missing \{question\}"):
        prompt.format()
    with pytest.raises(PromptError, match=r"unexpected \{other\}"):
        prompt.format(question="a", other="b")


def test_placeholders_helper() -> None:
    assert placeholders("{a} {b} {a} {{c}}") == {"a", "b"}
