"""ONNX encoders against the torch reference: same vectors, one cached export, distinct names."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.index.encoders import cache, loading, onnx_export
from retrieval.index.encoders.base import AUTO_CANDIDATES, DIMENSION, MODEL_NAME, Encoder, check_encoder_name
from retrieval.index.encoders.onnx_export import RECIPES, ExportError
from retrieval.index.encoders.onnx_runtime import OnnxEncoder
from retrieval.index.encoders.torch_encoder import TorchEncoder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fp32(onnx_cache: Path) -> OnnxEncoder:
    return loading.onnx_encoder(onnx_cache, "onnx")


@pytest.fixture(scope="module")
def int8(onnx_cache: Path) -> OnnxEncoder:
    return loading.onnx_encoder(onnx_cache, "onnx-int8")


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_fp32_vectors_match_torch(fp32, abstracts, torch_vectors):
    vectors = fp32.encode(abstracts)
    assert vectors.shape == (len(abstracts), DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert _cosines(vectors, torch_vectors).min() > 0.999


def test_int8_vectors_stay_close_to_torch(int8, abstracts, torch_vectors, record_property):
    cosines = _cosines(int8.encode(abstracts), torch_vectors)
    record_property("int8_cosine_mean", round(float(cosines.mean()), 5))
    record_property("int8_cosine_min", round(float(cosines.min()), 5))
    print(f"int8 cosine to torch: mean {cosines.mean():.5f}, min {cosines.min():.5f}")
    # per-channel weights keep abstracts at about 0.99; per-tensor scales fell to about 0.90
    assert cosines.min() > 0.98


def test_length_sorting_keeps_the_input_order(fp32, abstracts):
    together = fp32.encode(abstracts)
    one_by_one = np.vstack([fp32.encode([text]) for text in abstracts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    reversed_order = fp32.encode(abstracts[::-1])
    np.testing.assert_allclose(reversed_order, together[::-1], atol=1e-5)


def test_int8_vectors_do_not_depend_on_the_other_texts(int8, abstracts):
    # int8 activations are quantised per run: one text per run keeps each vector reproducible
    alone = np.vstack([int8.encode([text]) for text in abstracts])
    together = int8.encode(abstracts[::-1])[::-1]
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_small_batches_and_windows_give_the_same_vectors(onnx_cache, fp32, abstracts):
    batched = loading.onnx_encoder(onnx_cache, "onnx", batch_size=3, window=5, threads=1)
    np.testing.assert_allclose(batched.encode(abstracts), fp32.encode(abstracts), atol=1e-5)


def test_token_budget_batches_and_parallel_workers_give_the_same_vectors(onnx_cache, fp32, int8, abstracts):
    texts = [*abstracts, *(text.split(".")[0] for text in abstracts)]  # long and short texts
    budget = loading.onnx_encoder(onnx_cache, "onnx", batch_size=16, token_budget=512, window=7)
    np.testing.assert_allclose(budget.encode(texts), fp32.encode(texts), atol=1e-5)
    for variant, reference in (("onnx", fp32), ("onnx-int8", int8)):
        parallel = loading.onnx_encoder(onnx_cache, variant, workers=2, threads=2)
        np.testing.assert_allclose(parallel.encode(texts), reference.encode(texts), atol=1e-6)


def test_int8_runs_on_two_sessions_made_when_a_call_has_more_than_one_run(onnx_cache, int8, abstracts):
    encoder = loading.onnx_encoder(onnx_cache, "onnx-int8")
    assert len(encoder._sessions) == 1  # a command that encodes one query makes one session
    query = encoder.encode(["membrane protein folding"])
    assert len(encoder._sessions) == 1
    together = encoder.encode(abstracts)
    assert len(encoder._sessions) == 2  # one per core, each on its own thread
    np.testing.assert_allclose(query, int8.encode(["membrane protein folding"]), atol=1e-6)
    np.testing.assert_allclose(together, np.vstack([int8.encode([text]) for text in abstracts]), atol=1e-6)


def test_parallel_sessions_serve_concurrent_callers(onnx_cache, int8, abstracts):
    from concurrent.futures import ThreadPoolExecutor

    encoder = loading.onnx_encoder(onnx_cache, "onnx-int8")
    expected = int8.encode(abstracts)
    with ThreadPoolExecutor(4) as callers:  # Slack workers share one encoder
        results = list(callers.map(lambda _: encoder.encode(abstracts), range(8)))
    assert len(encoder._sessions) == 2
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_input_longer_than_256_tokens_is_cut_like_sentence_transformers(fp32, torch_encoder):
    text = " ".join(["protein folding kinetics of membrane channels"] * 120)
    longer = text + " completely different trailing words about galaxies"
    cut = fp32.encode([text, longer])
    assert float(cut[0] @ cut[1]) > 0.99999  # the tail beyond 256 word pieces is ignored
    assert float(cut[0] @ torch_encoder.encode([text])[0]) > 0.999


def test_empty_inputs(fp32):
    assert fp32.encode([]).shape == (0, DIMENSION)
    vector = fp32.encode([""])
    assert vector.shape == (1, DIMENSION) and np.isfinite(vector).all()


def test_export_is_cached_and_not_repeated(onnx_cache, monkeypatch):
    calls = []
    monkeypatch.setattr(onnx_export, "_export_fp32", lambda target: calls.append(target))
    monkeypatch.setattr(onnx_export, "_quantize", lambda *args: calls.append(args))
    for variant in ("onnx", "onnx-int8"):
        path = onnx_export.ensure_onnx_model(onnx_cache, variant)
        assert path.is_file() and path.stat().st_size > 10_000_000
        assert path.parent == cache.export_dir(onnx_cache)
        loading.onnx_encoder(onnx_cache, variant)
    assert calls == []


def test_export_folder_depends_on_the_torch_version(onnx_cache, monkeypatch):
    before = cache.export_dir(onnx_cache)
    real = cache._version
    monkeypatch.setattr(cache, "_version", lambda package: "0.0.0-test" if package == "torch" else real(package))
    after = cache.export_dir(onnx_cache)
    assert before != after and before.parent == after.parent == onnx_cache


def test_a_failed_export_leaves_no_file(tmp_path, monkeypatch):
    import torch

    def crash(model, args, path, **kwargs):
        Path(path).write_bytes(b"half a model")
        raise RuntimeError("simulated crash during export")

    monkeypatch.setattr(torch.onnx, "export", crash)
    with pytest.raises(ExportError, match="simulated crash"):
        onnx_export.ensure_onnx_model(tmp_path, "onnx")
    # neither an export folder nor a staging folder or temporary file: only the lock file
    assert [p.name for p in tmp_path.iterdir()] == [cache.export_key() + ".lock"]


def test_names_differ_per_variant(fp32, int8, torch_encoder):
    names = {torch_encoder.name, fp32.name, int8.name}
    assert len(names) == 3
    assert len({recipe.encoder_name for recipe in RECIPES.values()} | {torch_encoder.name}) == 4
    assert all(name.startswith(MODEL_NAME + "/") for name in names)


def test_check_encoder_name_refuses_to_mix(int8, torch_encoder):
    check_encoder_name(None, int8)
    check_encoder_name(int8.name, int8)
    with pytest.raises(ConfigError) as caught:
        check_encoder_name(torch_encoder.name, int8)
    assert "PAPERBOT_ENCODER=torch" in str(caught.value)
    with pytest.raises(ConfigError, match="re-ingest"):
        check_encoder_name("some-other-model/v3", int8)


def test_load_encoder_follows_the_setting(encoder_data_dir):
    def load(choice: str) -> Encoder:
        return loading.load_encoder(Settings(data_dir=encoder_data_dir, encoder=choice))

    assert load("onnx").name == RECIPES["onnx"].encoder_name
    assert load("onnx-int8").name == RECIPES["onnx-int8"].encoder_name
    assert load("torch").name == TorchEncoder.name


def test_a_real_probe_chooses_a_candidate_within_the_bar_and_remembers_it(tmp_path, copy_export, capsys):
    from retrieval.index.encoders.choice import QUALITY_BAR, read_choice

    root = tmp_path / "encoders"
    copy_export(root)  # the export, without the session's remembered choice
    settings = Settings(data_dir=tmp_path / "data", encoder="auto", encoder_cache_dir=root)
    auto = loading.load_encoder(settings)
    said = capsys.readouterr().err
    assert "Encoder probe" in said and "chose " in said  # long work is announced on stderr
    assert said.startswith("Encoder (0 s): first use on this machine: measuring which encoder runs fastest")
    assert "Encoder export" not in said  # the export was there: not made again
    made = read_choice(root, loading.auto_signature())
    assert made is not None and made.variant in AUTO_CANDIDATES
    by_variant = {r.variant: r for r in made.results}
    assert set(by_variant) == set(AUTO_CANDIDATES)
    assert by_variant["onnx"].cosine_min > 0.999  # fp32 ONNX is torch's vector space
    chosen = by_variant[made.variant]
    assert auto.name == chosen.encoder_name
    assert made.variant == "torch" or QUALITY_BAR.admits(chosen)
    assert chosen.texts_per_second == max(r.texts_per_second for r in made.results if
                                          r.variant == "torch" or QUALITY_BAR.admits(r))
    print(made.describe())
    assert loading.load_encoder(settings).name == auto.name
    assert "Encoder probe" not in capsys.readouterr().err  # remembered: no second probe
    assert not (tmp_path / "data" / "cache" / "onnx").exists()  # nothing per data dir


def test_auto_falls_back_to_torch_when_the_export_fails(tmp_path, monkeypatch, caplog, torch_encoder):
    def broken(root, variant="onnx", **options):
        raise ExportError("simulated: no onnx package")

    monkeypatch.setattr(loading, "ensure_onnx_model", broken)
    monkeypatch.setattr(loading, "ensure_optimized_graph", broken)
    monkeypatch.setattr(loading, "TorchEncoder", lambda: torch_encoder)
    root = tmp_path / "encoders"  # no remembered choice: auto probes, without the onnx candidates
    with caplog.at_level(logging.WARNING):
        encoder = loading.load_encoder(Settings(data_dir=tmp_path, encoder="auto", encoder_cache_dir=root))
    assert encoder is torch_encoder
    assert "simulated: no onnx package" in caplog.text
    with pytest.raises(ConfigError, match="PAPERBOT_ENCODER=torch"):
        loading.load_encoder(Settings(data_dir=tmp_path, encoder="onnx-int8", encoder_cache_dir=root))


def test_a_data_dir_from_before_the_shared_cache_keeps_its_encoder(tmp_path, onnx_cache):
    """Its own ``cache/onnx`` is no longer read; the index's recorded encoder comes from the shared cache."""
    data_dir = tmp_path / "data"
    legacy = data_dir / "cache" / "onnx" / cache.export_key()
    legacy.mkdir(parents=True)
    (legacy / RECIPES["onnx-int8"].file_name).write_bytes(b"an export made per data dir, before")
    settings = Settings(data_dir=data_dir, encoder="auto")
    encoder = loading.load_encoder(settings, indexed=RECIPES["onnx-int8"].encoder_name)
    assert isinstance(encoder, OnnxEncoder) and encoder.name == RECIPES["onnx-int8"].encoder_name
    assert encoder.model_file == cache.export_dir(onnx_cache) / onnx_export.optimized_name("onnx-int8")
    assert encoder.encode(["still the same vector space"]).shape == (1, DIMENSION)
    assert (legacy / RECIPES["onnx-int8"].file_name).read_bytes() == b"an export made per data dir, before"


def test_the_optimised_graph_is_saved_once_per_cpu_and_gives_the_same_vectors(onnx_cache, abstracts, monkeypatch):
    from retrieval.index.encoders import onnx_runtime

    for variant in ("onnx", "onnx-int8"):
        graph = onnx_export.ensure_optimized_graph(onnx_cache, variant)
        assert graph.parent == cache.export_dir(onnx_cache) and graph.name == onnx_export.optimized_name(variant)
        assert graph.name in cache.inspect_export(graph.parent).files  # listed in the manifest: checked like the rest
        raw = OnnxEncoder(onnx_export.ensure_onnx_model(onnx_cache, variant), name="raw", threads=1)
        optimised = OnnxEncoder(graph, name="optimised", threads=1, optimized=True)
        np.testing.assert_array_equal(optimised.encode(abstracts), raw.encode(abstracts))

    saved: list[object] = []
    real = onnx_runtime.make_session

    def counting(*args: Any, **kwargs: Any) -> Any:
        saved.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(onnx_export, "make_session", counting)
    for variant in ("onnx", "onnx-int8"):
        loading.onnx_encoder(onnx_cache, variant)
    assert saved == []  # made once: later encoders load the saved graph
