"""``auto`` chooses by measurement: the rule, the per-CPU memory, doctor's line, an index's own encoder,
and what a first load must prepare (announced before it starts).

Nothing here loads a model: candidates are fakes whose vectors are the reference's plus chosen
noise, and ``loading`` is patched where it would load torch or onnxruntime.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bot.commands.records import run_doctor
from retrieval.config import Settings
from retrieval.index.encoders import choice as encoder_choice
from retrieval.index.encoders import loading, onnx_export
from retrieval.index.encoders.base import DIMENSION, ENCODER_NAMES
from retrieval.index.encoders.cache import export_dir
from retrieval.index.encoders.choice import (
    REFERENCE,
    AutoChoice,
    ProbeResult,
    QualityBar,
    choice_path,
    cpu_model_and_flags,
    cpu_signature,
    measure,
    read_choice,
    remembered_or_probed,
    select,
)
from retrieval.index.maintenance import ENCODER_META_KEY, ConsistencyReport
from retrieval.index.paper_index import PaperIndex
from retrieval.storage.database import SchemaStatus
from retrieval.storage.schema import HEAD

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma f16c avx512f avx512_vnni hypervisor
processor\t: 1
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma f16c avx512f avx512_vnni hypervisor
"""


def result(variant: str, speed: float, mean: float = 1.0, low: float = 1.0) -> ProbeResult:
    return ProbeResult(variant, f"model/{variant}", speed, mean, low)


# --- the selection rule ----------------------------------------------------------------------


def test_the_fastest_candidate_within_the_bar_is_chosen():
    results = [result("torch", 18.0), result("onnx", 27.0, 1.0, 1.0), result("onnx-int8", 33.0, 0.995, 0.99)]
    assert select(results) == "onnx-int8"


def test_a_faster_candidate_below_the_bar_is_passed_over():
    bar = QualityBar(mean=0.99, min=0.97)
    per_tensor = result("onnx-int8-per-tensor", 40.0, 0.937, 0.870)
    low_min = result("onnx-int8", 35.0, 0.995, 0.96)  # good on average, one text far off
    assert select([result("torch", 18.0), result("onnx", 27.0), per_tensor, low_min], bar) == "onnx"


def test_the_reference_wins_when_it_is_fastest_and_always_qualifies():
    assert select([result("torch", 30.0), result("onnx-int8", 25.0, 0.995, 0.99)]) == "torch"
    assert select([result("torch", 10.0), result("onnx-int8", 25.0, 0.5, 0.1)]) == "torch"


def test_the_bar_is_inclusive_and_select_needs_results():
    bar = QualityBar(mean=0.99, min=0.97)
    assert bar.admits(result("onnx-int8", 1.0, 0.99, 0.97))
    assert not bar.admits(result("onnx-int8", 1.0, 0.9899, 0.99))
    with pytest.raises(ValueError):
        select([])


class FakeEncoder:
    """Vectors of a fixed random basis, optionally perturbed: cosine to the reference is known."""

    dimension = 8

    def __init__(self, name: str, noise: float = 0.0, seconds: float = 0.0, clock: list[float] | None = None) -> None:
        self.name = name
        self._noise = noise
        self._seconds = seconds
        self._clock = clock
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self._clock is not None:
            self._clock[0] += self._seconds * len(texts)
        rows = []
        for text in texts:
            rng = np.random.default_rng(abs(hash(text)) % 2**32)
            vector = rng.standard_normal(self.dimension)
            vector += self._noise * np.random.default_rng(7).standard_normal(self.dimension)
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32)


def test_measure_times_in_interleaved_rounds_and_compares_with_the_reference():
    clock = [0.0]
    encoders = {
        "torch": FakeEncoder("m/torch", seconds=0.05, clock=clock),
        "fast-but-far": FakeEncoder("m/far", noise=3.0, seconds=0.01, clock=clock),
        "onnx": FakeEncoder("m/onnx", seconds=0.02, clock=clock),
    }
    texts = [f"text {n}" for n in range(10)]
    seen: list[str] = []
    results = {r.variant: r for r in measure(encoders, texts, rounds=2, notify=seen.append, clock=lambda: clock[0])}
    assert seen == ["round 1/2: torch", "round 1/2: fast-but-far", "round 1/2: onnx",
                    "round 2/2: torch", "round 2/2: fast-but-far", "round 2/2: onnx"]
    assert results["torch"].texts_per_second == pytest.approx(20.0)
    assert results["onnx"].texts_per_second == pytest.approx(50.0)
    assert results["onnx"].cosine_min == pytest.approx(1.0)
    assert results["fast-but-far"].cosine_mean < 0.9
    assert select(list(results.values())) == "onnx"


# --- the signature ---------------------------------------------------------------------------


def test_cpu_model_and_simd_flags_are_read_from_cpuinfo():
    model, flags = cpu_model_and_flags(X86_CPUINFO)
    assert model == "AMD EPYC 9R14"
    assert flags == ["avx", "avx2", "avx512_vnni", "avx512f", "f16c", "fma", "sse4_1", "sse4_2"]
    arm = "processor\t: 0\nFeatures\t: fp asimd asimddp sve\nCPU part\t: 0xd0c\n"
    assert cpu_model_and_flags(arm)[1] == []  # no x86 SIMD names; the model falls back to platform
    assert cpu_model_and_flags("")[0]


def test_the_signature_names_cpu_flags_cores_and_runtime():
    signature = cpu_signature("runtime-1", cores=2, cpuinfo=X86_CPUINFO)
    assert signature["cpu"] == "AMD EPYC 9R14" and "avx512_vnni" in signature["flags"]
    assert signature["cores"] == 2 and signature["runtime"] == "runtime-1"
    others = [cpu_signature("runtime-1", 2, X86_CPUINFO.replace(" avx512_vnni", "")),
              cpu_signature("runtime-1", 4, X86_CPUINFO), cpu_signature("runtime-2", 2, X86_CPUINFO),
              cpu_signature("runtime-1", 2, X86_CPUINFO, runs="onnx-int8:workers=2")]
    paths = {choice_path(Path("/c"), s) for s in [signature, *others]}
    assert len(paths) == 5


def test_a_new_way_of_running_a_variant_is_measured_again():
    # the probe timed the variants as they were run then: other sessions or batches, other speeds
    signature = loading.auto_signature()
    assert signature["runs"] == onnx_export.run_settings()
    assert "onnx-int8:batch=1,budget=None,workers=2" in signature["runs"].split(";")
    one_session = dataclasses.replace(onnx_export.RECIPES["onnx-int8"], workers=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(onnx_export.RECIPES, "onnx-int8", one_session)
        assert choice_path(Path("/c"), loading.auto_signature()) != choice_path(Path("/c"), signature)


# --- remembering per signature ---------------------------------------------------------------


class Candidates:
    """Loader functions that count how often each candidate is loaded (= probed)."""

    def __init__(self, noise: dict[str, float] | None = None, broken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.loads: list[str] = []
        self._noise = noise or {}
        self._broken = broken

    def loaders(self) -> dict[str, object]:
        def make(variant: str):
            def load() -> FakeEncoder:
                self.loads.append(variant)
                if variant in self._broken:
                    raise RuntimeError(f"simulated: {variant} cannot be exported")
                return FakeEncoder(f"m/{variant}", noise=self._noise.get(variant, 0.0))

            return load

        return {variant: make(variant) for variant in ("torch", "onnx", "onnx-int8")}


TEXTS = [f"probe text number {n}" for n in range(6)]


def probe(folder: Path, signature: dict, candidates: Candidates, notify=None):
    return remembered_or_probed(folder, signature, candidates.loaders(), texts=TEXTS, rounds=1, notify=notify)  # type: ignore[arg-type]


def test_the_choice_is_probed_once_and_then_read(tmp_path):
    signature = cpu_signature("rt", 2, X86_CPUINFO)
    candidates = Candidates()
    said: list[str] = []
    first, loaded = probe(tmp_path, signature, candidates, notify=said.append)
    assert sorted(candidates.loads) == ["onnx", "onnx-int8", "torch"] and set(loaded) == set(candidates.loads)
    assert said[0].startswith("choosing the fastest accurate encoder") and said[-1].startswith(f"chose {first.variant}")
    path = choice_path(tmp_path, signature)
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["variant"] == first.variant and stored["signature"] == signature
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []  # written atomically

    again, loaded_again = probe(tmp_path, signature, candidates)
    assert len(candidates.loads) == 3 and loaded_again == {}  # nothing loaded, nothing timed
    assert again.variant == first.variant and again.results == first.results


def test_another_cpu_signature_is_probed_again(tmp_path):
    candidates = Candidates()
    probe(tmp_path, cpu_signature("rt", 2, X86_CPUINFO), candidates)
    probe(tmp_path, cpu_signature("rt", 2, X86_CPUINFO.replace(" avx512_vnni", "")), candidates)
    probe(tmp_path, cpu_signature("rt-upgraded", 2, X86_CPUINFO), candidates)
    assert len(candidates.loads) == 9
    assert len(list(tmp_path.glob("auto-choice-*.json"))) == 3


@pytest.mark.parametrize("content", ["{ not json", "", '{"version": 1}', '{"version": 99, "variant": "torch"}',
                                     '[1, 2, 3]'])
def test_a_corrupt_choice_file_is_probed_again_with_a_warning(tmp_path, caplog, content):
    signature = cpu_signature("rt", 2, X86_CPUINFO)
    choice_path(tmp_path, signature).write_text(content, encoding="utf-8")
    candidates = Candidates()
    with caplog.at_level(logging.WARNING, logger="retrieval.index.encoders.choice"):
        made, _ = probe(tmp_path, signature, candidates)
    assert "unreadable" in caplog.text and "measuring again" in caplog.text
    assert len(candidates.loads) == 3
    assert read_choice(tmp_path, signature) == made  # replaced by a good file


def test_a_file_made_for_another_signature_is_not_trusted(tmp_path, caplog):
    signature = cpu_signature("rt", 2, X86_CPUINFO)
    foreign = AutoChoice("onnx-int8", signature={**signature, "cores": 64}, results=[result("onnx-int8", 99.0)])
    choice_path(tmp_path, signature).write_text(foreign.to_json(), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="retrieval.index.encoders.choice"):
        assert read_choice(tmp_path, signature) is None
    assert "another CPU" in caplog.text


def test_a_candidate_that_cannot_be_loaded_is_left_out(tmp_path):
    candidates = Candidates(broken={"onnx", "onnx-int8"})
    made, loaded = probe(tmp_path, cpu_signature("rt", 2, X86_CPUINFO), candidates)
    assert made.variant == "torch" and set(loaded) == {"torch"}
    assert any("simulated: onnx-int8 cannot be exported" in note for note in made.notes)


def test_candidates_far_from_the_reference_are_not_chosen(tmp_path):
    made, _ = probe(tmp_path, cpu_signature("rt", 2, X86_CPUINFO), Candidates(noise={"onnx": 5.0, "onnx-int8": 5.0}))
    assert made.variant == REFERENCE
    far = {r.variant: r for r in made.results}["onnx-int8"]
    assert far.cosine_mean < QualityBar().mean and "below the bar" in made.describe()


def test_the_description_names_the_cpu_the_figures_and_the_bar():
    signature = cpu_signature("rt", 2, X86_CPUINFO)
    made = AutoChoice("onnx-int8", signature, [result("torch", 18.0), result("onnx", 27.0),
                                               result("onnx-int8", 36.0, 0.995, 0.991)],
                      probed_at="2026-12-01 16:05 UTC", load_average=0.4, probe_texts=32)
    line = made.describe()
    assert line.startswith("Encoder auto choice on this CPU: onnx-int8 (probed 2026-12-01 16:05 UTC, load average 0.4")
    assert "AMD EPYC 9R14, 2 cores" in line and "avx512_vnni" in line
    assert "onnx-int8 36.0/s (2.00x), cosine 0.9950/0.9910" in line and "torch 18.0/s (1.00x)" in line
    assert "mean >= 0.99, min >= 0.97 on 32 texts" in line


def test_the_probe_texts_are_bundled_and_spread_over_lengths():
    texts = encoder_choice.probe_texts()
    assert len(texts) == encoder_choice.PROBE_TEXTS and len(set(texts)) == len(texts)
    lengths = sorted(len(t) for t in texts)
    assert lengths[0] < 400 < lengths[-1]  # short and long records both


# --- load_encoder, an existing index and doctor ----------------------------------------------


class Named:
    dimension = DIMENSION

    def __init__(self, name: str) -> None:
        self.name = name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)


@pytest.fixture()
def no_models(monkeypatch):
    """``loading`` with fakes where it would load torch or onnxruntime; records every load."""
    loads: list[str] = []

    def torch_encoder() -> Named:
        loads.append("torch")
        return Named(ENCODER_NAMES["torch"])

    def onnx_encoder(root: Path, variant: str = "onnx", **options: object) -> Named:
        loads.append(variant)
        return Named(ENCODER_NAMES[variant])  # type: ignore[index]

    monkeypatch.setattr(loading, "TorchEncoder", type("T", (), {"name": ENCODER_NAMES["torch"],
                                                                "__new__": lambda cls: torch_encoder()}))
    monkeypatch.setattr(loading, "onnx_encoder", onnx_encoder)
    monkeypatch.setattr(loading, "auto_signature", lambda: cpu_signature("rt", 2, X86_CPUINFO))
    return loads


def settings_in(tmp_path: Path, encoder: str) -> Settings:
    """A data dir and an encoder cache of this test only (never the session's)."""
    return Settings(data_dir=tmp_path / "data", encoder=encoder, encoder_cache_dir=tmp_path / "encoders",
                    _env_file=None)


def remember(settings: Settings, variant: str) -> AutoChoice:
    """This machine's remembered auto choice, as a probe would have written it."""
    made = AutoChoice(variant, loading.auto_signature(),
                      [result("torch", 18.0), result("onnx", 25.0), result("onnx-int8", 33.0, 0.995, 0.99)],
                      probed_at="2026-12-01 16:05 UTC", probe_texts=32)
    made.results = [ProbeResult(r.variant, ENCODER_NAMES[r.variant], r.texts_per_second,  # type: ignore[index]
                                r.cosine_mean, r.cosine_min) for r in made.results]
    encoder_choice.write_choice(settings.encoder_cache_dir, made)
    return made


def test_auto_uses_the_remembered_choice_without_probing(tmp_path, no_models):
    settings = settings_in(tmp_path, "auto")
    remember(settings, "onnx")
    assert loading.load_encoder(settings).name == ENCODER_NAMES["onnx"]
    assert no_models == ["onnx"]


def test_a_pinned_encoder_never_probes(tmp_path, no_models):
    for choice, name in (("torch", ENCODER_NAMES["torch"]), ("onnx-int8", ENCODER_NAMES["onnx-int8"])):
        settings = settings_in(tmp_path, choice)
        assert loading.load_encoder(settings).name == name
    assert no_models == ["torch", "onnx-int8"]
    assert not (tmp_path / "encoders").exists()  # nothing probed, nothing remembered


@pytest.mark.parametrize("indexed", ["all-MiniLM-L6-v2/torch", "all-MiniLM-L6-v2/onnx-fp32"])
def test_auto_keeps_the_encoder_of_an_existing_index(tmp_path, no_models, indexed):
    settings = settings_in(tmp_path, "auto")
    remember(settings, "onnx-int8")  # this machine would choose int8
    assert loading.load_encoder(settings, indexed=indexed).name == indexed
    assert loading.load_encoder(settings, indexed="some-other-model/v3").name == ENCODER_NAMES["onnx-int8"]

    index = PaperIndex.open(settings)  # the real seam: the index tells load_encoder its recorded name
    try:
        index.store.set_meta(ENCODER_META_KEY, indexed)
        assert index.encoder.name == indexed
        index.check_encoder()  # no ConfigError: nothing to mix, nothing re-embedded
    finally:
        index.close()


def test_an_unfinished_re_embedding_goes_on_with_its_target(tmp_path, no_models):
    settings = settings_in(tmp_path, "auto")
    remember(settings, "onnx-int8")
    index = PaperIndex.open(settings)
    try:
        index.store.set_meta(ENCODER_META_KEY, "unfinished re-embedding from all-MiniLM-L6-v2/torch to "
                                               "all-MiniLM-L6-v2/onnx-fp32")
        assert index.encoder.name == "all-MiniLM-L6-v2/onnx-fp32"
    finally:
        index.close()


def exported(settings: Settings, *variants: str) -> None:
    """This runtime's export in the test's encoder cache, holding (empty stand-ins for) ``variants``."""
    folder = export_dir(settings.encoder_cache_dir)
    folder.mkdir(parents=True)
    for variant in variants:
        (folder / onnx_export.RECIPES[variant].file_name).write_bytes(b"")
    files = {onnx_export.RECIPES[variant].file_name: {"bytes": 0} for variant in variants}
    (folder / "manifest.json").write_text(json.dumps({"version": 1, "files": files}), encoding="utf-8")


def test_what_a_first_load_must_prepare_follows_the_choice(tmp_path):
    auto = settings_in(tmp_path, "auto")
    both = "exporting the ONNX encoders and measuring which runs fastest on this CPU"
    assert loading.pending_preparation(auto) == both
    assert loading.pending_preparation(settings_in(tmp_path, "onnx")) == "exporting the encoder to ONNX"
    assert loading.pending_preparation(settings_in(tmp_path, "torch")) is None
    assert loading.pending_preparation(auto, indexed=ENCODER_NAMES["torch"]) is None  # the index keeps torch
    assert loading.pending_preparation(auto, indexed=ENCODER_NAMES["onnx"]) == "exporting the encoder to ONNX"
    assert loading.pending_preparation(auto, indexed="some-other-model/v3") == both
    exported(auto, "onnx", "onnx-int8")
    assert loading.pending_preparation(auto) == "measuring which encoder runs fastest on this CPU"
    assert loading.pending_preparation(settings_in(tmp_path, "onnx-int8")) is None
    remember(auto, "onnx-int8")
    assert loading.pending_preparation(auto) is None


def test_a_remembered_choice_needs_only_its_own_export(tmp_path):
    settings = settings_in(tmp_path, "auto")
    remember(settings, "torch")
    assert loading.pending_preparation(settings) is None
    remember(settings, "onnx")
    assert loading.pending_preparation(settings) == "exporting the encoder to ONNX"


def test_load_encoder_announces_what_it_must_prepare_first(tmp_path, no_models, capsys):
    settings = settings_in(tmp_path, "auto")
    remember(settings, "onnx")  # chosen on this CPU, but the export is gone: the load exports it
    said: list[str] = []
    loading.load_encoder(settings, notify=said.append)
    assert said == ["first use on this machine: exporting the encoder to ONNX "
                    "(once; about a minute, several on a busy machine)"]
    loading.load_encoder(settings)  # by default on stderr
    assert capsys.readouterr().err.startswith("Encoder (0 s): first use on this machine: exporting the encoder")
    exported(settings, "onnx")
    said.clear()
    loading.load_encoder(settings, notify=said.append)
    assert said == []  # ready: nothing said


def test_doctor_line_says_what_auto_chose_and_what_the_index_keeps(tmp_path, no_models):
    settings = settings_in(tmp_path, "auto")
    assert "not measured on this CPU yet" in loading.describe_encoder_choice(settings, ENCODER_NAMES["torch"])
    made = remember(settings, "onnx-int8")
    int8 = ENCODER_NAMES["onnx-int8"]
    assert loading.describe_encoder_choice(settings, int8) == made.describe()
    kept = loading.describe_encoder_choice(settings, ENCODER_NAMES["torch"])
    assert kept.startswith(made.describe()) and "This index keeps 'all-MiniLM-L6-v2/torch'" in kept
    assert "PAPERBOT_ENCODER=onnx-int8 paperbot doctor --repair" in kept
    pinned = settings_in(tmp_path, "torch")
    assert loading.describe_encoder_choice(pinned, ENCODER_NAMES["torch"]).startswith(
        "Encoder 'all-MiniLM-L6-v2/torch', set by PAPERBOT_ENCODER=torch. Encoder auto choice on this CPU: onnx-int8")


def test_doctor_prints_the_choice(tmp_path):
    line = "Encoder auto choice on this CPU: onnx-int8 (probed ...)."
    report = ConsistencyReport(records=2, vectors=2, indexed_encoder="x", current_encoder="x", encoder_choice=line)
    out = io.StringIO()
    database = SchemaStatus(backend="sqlite", where=str(tmp_path / "records.sqlite3"), revision=None, head=HEAD)
    checks = SimpleNamespace(check_consistency=lambda: report, database_status=lambda: database,
                             cluster_status=lambda: None)  # one machine: no cluster to report
    ctx = SimpleNamespace(assistant=SimpleNamespace(upkeep=checks), stdout=out,
                          settings=settings_in(tmp_path, "auto"),
                          out=lambda text="": out.write(text + "\n"),
                          out_json=lambda payload: out.write(json.dumps(payload) + "\n"))
    assert run_doctor(Namespace(force=False, repair=False, queue=False, json=False, no_model=True), ctx) == 0  # type: ignore[arg-type]
    assert out.getvalue().splitlines() == [
        "Index consistent: 2 records, 2 vectors.", line,
        f"Encoder cache (ONNX exports, auto choice; shared by all data dirs): {tmp_path / 'encoders'}",
        f"Database: SQLite {tmp_path / 'records.sqlite3'}, schema (not created yet), this paperbot's is {HEAD}: "
        "upgraded on next use, or now with `paperbot db upgrade`."]
    out.truncate(0), out.seek(0)
    run_doctor(Namespace(force=False, repair=False, queue=False, json=True, no_model=True), ctx)  # type: ignore[arg-type]
    printed = json.loads(out.getvalue())
    assert printed["encoder_choice"] == line
    assert printed["database"] == {"backend": "sqlite", "where": str(tmp_path / "records.sqlite3"), "revision": None,
                                   "head": HEAD, "set_aside": [], "read_only": None, "current": False}
