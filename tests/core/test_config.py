"""Settings: environment and .env, one clear line naming a bad variable."""

import pytest

from retrieval.config import load_settings
from retrieval.errors import ConfigError


def test_data_dir_and_defaults_from_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PAPERBOT_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = load_settings()
    assert settings.data_dir == tmp_path / "d"
    assert settings.chroma_url is None
    assert settings.llm_configured is False
    assert settings.records_path.parent == tmp_path / "d"


def test_dotenv_file_is_read_and_environment_wins(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAPERBOT_LLM_MODEL", raising=False)
    (tmp_path / ".env").write_text("PAPERBOT_LLM_MODEL=llama3\nPAPERBOT_CHROMA_URL=http://127.0.0.1:9000/\n")
    settings = load_settings()
    assert settings.llm_model == "llama3"
    assert settings.chroma_url == "http://127.0.0.1:9000"
    monkeypatch.setenv("PAPERBOT_LLM_MODEL", "qwen")
    assert load_settings().llm_model == "qwen"


def test_base_url_alone_configures_the_llm(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert load_settings().llm_configured is True
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert load_settings().llm_configured is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PAPERBOT_LLM_TIMEOUT", "soon"),
        ("PAPERBOT_CHROMA_URL", "localhost:8000"),
        ("PAPERBOT_ENCODER", "gpu"),
        ("PAPERBOT_COLLECTION", "a"),
        ("PAPERBOT_OPENALEX_URL", "ftp://x"),
    ],
)
def test_invalid_setting_names_the_variable(monkeypatch, tmp_path, variable, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert variable in str(caught.value)
    assert "\n" not in str(caught.value)


def test_allow_lists_are_comma_separated(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PAPERBOT_SLACK_ALLOWED_CHANNELS", "C1, C2,,")
    assert load_settings().slack_allowed_channels == ["C1", "C2"]


def test_secrets_are_not_printed(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    settings = load_settings()
    assert "sk-very-secret" not in repr(settings)
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == "sk-very-secret"


def test_every_setting_is_documented_in_env_example():
    from pathlib import Path

    from pydantic import AliasChoices

    from retrieval.config import Settings

    example = (Path(__file__).resolve().parents[2] / ".env.example").read_text(encoding="utf-8")
    variables = []
    for name, field in Settings.model_fields.items():
        assert isinstance(field.validation_alias, AliasChoices), f"{name} has no environment variable"
        variables.append(field.validation_alias.choices[0])
    missing = [name for name in variables if f"{name}=" not in example]
    assert missing == []
