"""The check kit: it passes on healthy models, fails with the right diagnosis on every planted
tutorial bug, skips (never passes) checks whose adapter part is missing, and leaves the
library as it found it."""

import json
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from transformer_lib import DecoderOnlyTransformer, Transformer
from transformer_lib.pipeline import decoding
from transformer_lib.pipeline.check_kit import (
    CHECKS,
    PLANTED_BUGS,
    CheckReport,
    ModelAdapter,
    TorchTransformerModel,
    adapt,
    check_names,
    plant,
    run_checks,
    tiny_model,
)
from transformer_lib.pipeline.check_kit.causes import ALL_CAUSES
from transformer_lib.pipeline.check_kit.library import tiny_config
from transformer_lib.pipeline.check_kit.planting import BUGS

sys.path.insert(0, str(Path(__file__).parent))
import test_decoder_only  # noqa: E402  (its loss test must catch a planted bug too)

torch.set_num_threads(1)

ENCODER_ONLY_CHECKS = {"source_dependence"}  # what a decoder-only model skips


# ---- healthy models pass ------------------------------------------------------------------
@pytest.mark.parametrize(
    "arch, config, skipped",
    [
        ("encoder-decoder", {}, set()),
        ("encoder-decoder", {"norm_first": True}, set()),
        ("encoder-decoder", {"positional": "learned"}, {"positional_spectrum"}),
        ("decoder-only", {}, ENCODER_ONLY_CHECKS),
        ("decoder-only", {"norm_first": True}, ENCODER_ONLY_CHECKS),
        ("decoder-only", {"positional": "learned"}, {"positional_spectrum", *ENCODER_ONLY_CHECKS}),
    ],
    ids=[
        "enc-dec",
        "enc-dec-pre-LN",
        "enc-dec-learned",
        "dec-only",
        "dec-only-pre-LN",
        "dec-only-learned",
    ],
)
def test_the_library_models_pass(arch, config, skipped):
    model = tiny_model(arch, **config)
    report = run_checks(model)
    assert report.passed, str(report)
    assert {r.name for r in report.skipped} == skipped, str(report)
    assert len(report) == len(CHECKS)


def test_a_prefix_lm_passes():
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(tiny_config(), prefix_lm=True).eval()
    report = run_checks(model)
    assert report.passed, str(report)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_torch_nn_transformer_with_embeddings_passes(norm_first):
    torch.manual_seed(0)
    model = TorchTransformerModel(tiny_config(norm_first=norm_first)).eval()
    report = run_checks(model)
    assert report.passed, str(report)
    # What nn.Transformer cannot give is skipped, and the reason says so.
    skipped = {r.name: r.finding for r in report.skipped}
    assert set(skipped) == {
        "attention_rows",
        "torch_parity",
        "kv_cache",
        "cache_reorder",
        "beam_greedy",
    }
    assert "nn.Transformer" in skipped["attention_rows"] and skipped["kv_cache"].startswith("needs")
    passed = {r.name for r in report if r.passed}
    assert {"causality", "padding_invariance", "positional_spectrum", "teacher_forcing"} <= passed


def test_the_torch_wrapper_is_a_real_translation_model():
    torch.manual_seed(0)
    model = TorchTransformerModel(tiny_config(dropout=0.0)).eval()
    src = torch.randint(5, 48, (2, 6))
    tgt = torch.randint(5, 48, (2, 5))
    memory, blocked = model.encode(src)
    assert_close(model.decode(tgt, memory, blocked), model(src, tgt))
    assert model.generator.weight is model.embedding.weight
    out = decoding.greedy_decode(model, src, max_len=6, use_cache=False)
    assert out.shape[0] == 2 and (out[:, 0] == model.config.bos_id).all()


# ---- every planted bug is caught by its check, with its diagnosis ----------------------------
@pytest.fixture
def library_state():
    """Every attribute a bug patches, as it is before the test."""
    return {
        (p.owner, p.attribute): vars(p.resolve()).get(p.attribute)
        for bug in BUGS
        for p in bug.patches
    }


@pytest.mark.parametrize("bug_id", list(PLANTED_BUGS))
def test_each_planted_bug_fails_its_check_with_its_diagnosis(bug_id, library_state):
    bug = PLANTED_BUGS[bug_id]
    with plant(bug_id):
        report = run_checks(bug.model())
    assert not report.passed
    for check, cause in bug.caught_by:
        found = report[check]
        assert found.failed, f"{bug_id}: {check} did not fail\n{report}"
        assert cause in found.cause_keys, f"{bug_id}: {check} says {found.cause_keys}"
        assert found.finding and found.measured, found
    primary_check, primary_cause = bug.caught_by[0]
    if primary_check not in ("causality", "padding_invariance"):  # these list several causes
        assert report[primary_check].causes[0].key == primary_cause, report[primary_check]
    # The library is itself again: every patched attribute restored, and the same model
    # built afterwards passes the checks that caught the bug.
    after = {key: vars(p.resolve()).get(p.attribute) for key, p in _patches()}
    assert after == library_state
    healthy = run_checks(bug.model(), only=[c for c, _ in bug.caught_by])
    assert healthy.passed, str(healthy)


def _patches():
    return [((p.owner, p.attribute), p) for bug in BUGS for p in bug.patches]


def test_every_bug_is_documented_as_teaching_material():
    assert len(PLANTED_BUGS) == len(BUGS) >= 25
    for bug in PLANTED_BUGS.values():
        assert "\n" not in bug.mistake and len(bug.mistake) <= 100, bug.id
        assert "# BUG" in bug.source, bug.id  # the override shows where the mistake is
        assert bug.where and all(w.startswith("transformer_lib.") for w in bug.where)
        assert bug.caught_by and all(check in CHECKS for check, _ in bug.caught_by), bug.id
        assert all(cause in ALL_CAUSES for _, cause in bug.caught_by), bug.id


def test_the_plant_is_undone_after_an_error(library_state):
    with pytest.raises(RuntimeError, match="inside"), plant("no_sqrt_dk", "pytorch_default_adam"):
        raise RuntimeError("inside the plant")
    assert {key: vars(p.resolve()).get(p.attribute) for key, p in _patches()} == library_state
    with pytest.raises(KeyError, match="known"), plant("no_such_bug"):
        pass


def test_the_decoder_only_suite_catches_the_unshifted_loss():
    """The library's own test of the decoder-only loss fails with the bug planted."""
    test = test_decoder_only.test_training_and_validation_losses_score_the_next_token
    with plant("unshifted_target_decoder_only"), pytest.raises(AssertionError):
        test(prefix_lm=False)
    test(prefix_lm=False)  # and passes again once it is gone


# ---- missing parts are skipped, never passed ------------------------------------------------
def test_an_adapter_with_only_forward_skips_what_it_cannot_check():
    model = tiny_model("encoder-decoder")
    adapter = ModelAdapter(
        forward=lambda src, tgt: model(src, tgt), arch="encoder-decoder", vocab_size=48, d_model=32
    )
    report = run_checks(adapter)
    ran = {r.name for r in report if not r.skipped}
    assert ran == {"causality", "padding_invariance", "source_dependence"}
    assert report.passed
    for r in report.skipped:
        assert r.finding.startswith("needs "), r
        assert not r.measured and not r.causes
    assert "SKIP" in str(report) and "needs attention weights (attention)" in str(report)


@pytest.mark.parametrize("shift", [1, 0], ids=["shifted", "unshifted"])
def test_a_readers_own_language_model_loss_is_checked(shift):
    """A plain LM (no <sep>) whose training step the reader writes against the contract."""
    model = tiny_model("decoder-only")

    def training_loss(model_fn, batch):
        ids = batch.tgt  # (B, L)
        logits = model_fn(ids[:, :-1])  # (B, L-1, V)
        target = ids[:, shift:][:, : logits.size(1)]
        return torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), target.flatten(), ignore_index=0
        )

    adapter = ModelAdapter(
        forward=lambda ids: model(ids),
        arch="decoder-only",
        vocab_size=48,
        d_model=32,
        training_loss=training_loss,
    )
    (r,) = run_checks(adapter, only=["teacher_forcing"])
    assert r.passed == (shift == 1), r
    if not r.passed:
        assert r.causes[0].key == "unshifted-target" and "copies its input" in r.finding


def test_a_failing_forward_is_reported_as_a_failure_with_the_error():
    adapter = ModelAdapter(
        forward=lambda src, tgt: torch.zeros(tgt.size(0), 3, 48),
        arch="encoder-decoder",
        vocab_size=48,
        d_model=32,
    )
    report = run_checks(adapter, only=["causality"])
    (r,) = report
    assert r.failed and "raised ValueError" in r.finding and "(B, T, V)" in r.finding
    assert r.cause_keys == ("raised",)


def test_beam_search_that_differs_from_greedy_fails():
    model = tiny_model("encoder-decoder")
    good = adapt(model)
    assert run_checks(good, only=["beam_greedy"]).passed
    adapter = adapt(model)
    adapter.beam = lambda src, k, n: decoding.beam_search(model, src, beam_size=4, max_len=n + 1)
    (r,) = run_checks(adapter, only=["beam_greedy"])
    assert r.failed and r.cause_keys == ("beam-k1-differs-from-greedy",)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(arch="encoder-only"), "arch must be one of"),
        (dict(vocab_size=6), "fewer than 8 ordinary tokens"),
        (dict(attention=42), "attention must be a function"),
        (dict(unavailable={"wings": "none"}), "unknown parts"),
    ],
)
def test_adapter_errors_are_clear(bad, match):
    kw = dict(forward=lambda ids: ids, arch="decoder-only", vocab_size=48, d_model=32)
    with pytest.raises(ValueError, match=match):
        ModelAdapter(**{**kw, **bad})
    with pytest.raises(TypeError, match="wrap it in"):
        adapt(torch.nn.Linear(2, 2))


# ---- the report ------------------------------------------------------------------------------
def test_the_report_reads_as_text_html_and_json():
    with plant("causal_mask_off_by_one"):
        report = run_checks(tiny_model("encoder-decoder"))
    assert isinstance(report, CheckReport) and not report.passed
    assert report["causality"] in report.failures
    text = str(report)
    assert "FAIL  causality" in text and "PASS  positional_spectrum" in text
    assert "typical causes:" in text and "off by one" in text
    assert report.summary() in text
    html = report._repr_html_()
    assert html.count("<tr>") == len(report) + 1 and "<table" in html
    assert "&lt;pad&gt;" in html and "<pad>" not in html  # texts are escaped
    # A status badge never breaks inside its word in a narrow column ("P A S S").
    assert html.count("font-weight:600;white-space:nowrap") == len(report)
    data = json.loads(report.to_json())
    assert data["passed"] is False and len(data["results"]) == len(report)
    by_name = {r["name"]: r for r in data["results"]}
    assert by_name["causality"]["status"] == "failed"
    assert by_name["causality"]["causes"][0]["key"] == "causal-mask-off-by-one"
    with pytest.raises(KeyError, match="no check named"):
        report["nonsense"]


def test_running_the_kit_leaves_the_random_state_and_the_mode_alone():
    model = tiny_model("decoder-only").train()
    state = torch.random.get_rng_state()
    report = run_checks(model, only=["eval_determinism", "kv_cache", "teacher_forcing"])
    assert report.passed and model.training
    assert torch.equal(torch.random.get_rng_state(), state)
    assert [r.name for r in report] == ["eval_determinism", "kv_cache", "teacher_forcing"]
    with pytest.raises(ValueError, match="unknown check names"):
        run_checks(model, only=["causality", "telepathy"])


def test_the_report_order_and_names():
    names = check_names()
    assert set(names) == set(CHECKS) and len(names) == 18
    assert names.index("causality") < names.index("kv_cache") < names.index("noam_peak")
    for name in names:
        assert CHECKS[name].title and CHECKS[name].doc.strip(), name


def test_library_adapters_cover_both_architectures():
    assert adapt(tiny_model("encoder-decoder")).arch == "encoder-decoder"
    decoder_only = adapt(tiny_model("decoder-only"))
    assert decoder_only.arch == "decoder-only" and decoder_only.sep_id == 4
    assert isinstance(tiny_model("decoder-only"), DecoderOnlyTransformer)
    assert isinstance(tiny_model(), Transformer)
    with pytest.raises(ValueError, match="arch must be"):
        tiny_model("encoder-only")


def test_nan_logits_at_real_positions_fail_with_their_own_diagnosis():
    """NaN logits would make every tolerance infinite; the report names them instead. NaN at
    padded target positions, which no loss or decoder reads, is allowed."""
    model = tiny_model("encoder-decoder")

    def adapter(nan_where):
        def forward(src, tgt):
            logits = model(src, tgt)  # (B, T, V)
            return logits.masked_fill(nan_where(tgt)[..., None], float("nan"))

        return ModelAdapter(forward=forward, arch="encoder-decoder", vocab_size=48, d_model=32)

    last = run_checks(adapter(lambda tgt: torch.arange(tgt.size(1)) == tgt.size(1) - 1))
    for name in ("causality", "padding_invariance", "source_dependence"):
        assert last[name].failed and last[name].cause_keys == ("non-finite-logits",), last[name]
        assert "NaN or infinite logits" in last[name].finding
    at_pads = run_checks(adapter(lambda tgt: tgt == 0), only=["padding_invariance"])
    assert at_pads.passed, str(at_pads)
