"""The in-browser translator's ONNX export (transformer_lib.pipeline.onnx_export).

The shipped model is exported once per module (float32, each graph self-contained) and
converted to what the page loads (float16 weights, stored once for both graphs). Both are
run with onnxruntime in Python, by :class:`OnnxGreedy`, which decodes exactly as
``_static/live/live-translate.js`` does, and compared with PyTorch on test-split
sentences: greedy outputs, attention maps, and every single head switched off. The
float16 graphs are compared with PyTorch running the same rounded weights
(``with_stored_precision``: identical) and with the float32 checkpoint (agreement
measured and bounded).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from transformer_lib.pipeline import onnx_export as ox  # noqa: E402
from transformer_lib.pipeline.corpus import group_references, read_pairs, split_pairs  # noqa: E402
from transformer_lib.pipeline.decoding import greedy_decode  # noqa: E402
from transformer_lib.pipeline.pretrained import DEFAULT_CHECKPOINT, load_pretrained  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LIVE_JS = ROOT / "_static" / "live" / "live-translate.js"
GENERATED = ROOT / "_static" / "live" / "generated"
KINDS = ("encoder", "decoder", "cross")
N_PARITY = 200  # test-split sentences compared with PyTorch
N_GATED = 6  # sentences per single-head gate
# Attention maps of the float32 export against PyTorch (measured: about 2e-6), and of the
# float16 export against PyTorch with the same rounded weights (about 2e-6) ...
ATOL_SAME_WEIGHTS = 1e-4
# ... and against the float32 checkpoint (measured: about 2e-3).
ATOL_FLOAT16 = 1e-2
# Greedy outputs of the float16 export equal to the float32 checkpoint's (measured on the
# shipped model: 200/200 sentences, 575/576 single-head-off cases; near-ties may flip).
MIN_AGREEMENT_FLOAT16 = 0.98


class OnnxGreedy:
    """Greedy decoding with the two exported graphs, as live-translate.js does it."""

    def __init__(self, exported: ox.ExportedModel, meta: dict):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.encoder = ort.InferenceSession(str(exported.encoder), options)
        self.decoder = ort.InferenceSession(str(exported.decoder), options)
        self.meta = meta
        self.never = np.array(meta["never_generate"])

    def gates(self, heads_off=()) -> dict[str, np.ndarray]:
        m = self.meta
        layers = {
            "encoder": m["n_encoder_layers"],
            "decoder": m["n_decoder_layers"],
            "cross": m["n_decoder_layers"],
        }
        gates = {k: np.ones((n, m["n_heads"]), np.float32) for k, n in layers.items()}
        for kind, layer, head in heads_off:
            gates[kind][layer, head] = 0.0
        return gates

    def translate(self, ids: list[int], heads_off=()) -> tuple[list[int], dict]:
        m, g = self.meta, self.gates(heads_off)
        src = np.array([ids], np.int64)
        memory, enc_attn = self.encoder.run(None, {"src": src, "encoder_gates": g["encoder"]})
        ys = [m["bos_id"]]
        limit = max(2, min(len(ids) + m["extra_output_tokens"], m["max_len"]))
        for _ in range(limit - 1):
            logits, dec_attn, cross_attn = self.decoder.run(
                None,
                {
                    "tgt": np.array([ys], np.int64),
                    "memory": memory,
                    "src": src,
                    "decoder_gates": g["decoder"],
                    "cross_gates": g["cross"],
                },
            )
            logits = logits[0].copy()
            logits[self.never] = -np.inf
            ys.append(int(logits.argmax()))
            if ys[-1] == m["eos_id"]:
                break
        return ys, {"encoder": enc_attn, "decoder": dec_attn, "cross": cross_attn}


@pytest.fixture(scope="module")
def translator():
    return load_pretrained()


@pytest.fixture(scope="module")
def meta(translator):
    rec = translator.checkpoint["tokenizer"]
    return ox.browser_metadata(translator.model, rec["json"])


@pytest.fixture(scope="module")
def exports(translator, tmp_path_factory):
    """{"float32": self-contained float32 graphs, "float16": what the page loads}."""
    model = translator.model
    tmp = tmp_path_factory.mktemp("onnx")
    fp32 = ox.export_onnx(model, tmp / "float32", weights="float32", share_weights=False)
    fp16 = ox.convert_export(fp32, tmp / "float16", model, weights="float16", share_weights=True)
    return {"float32": fp32, "float16": fp16}


@pytest.fixture(scope="module")
def references(translator):
    """The PyTorch model each export computes: {"float32": checkpoint, "float16": rounded}."""
    model = translator.model
    return {"float32": model, "float16": ox.with_stored_precision(model, "float16")}


@pytest.fixture(scope="module")
def runners(exports, meta):
    return {name: OnnxGreedy(e, meta) for name, e in exports.items()}


@pytest.fixture(scope="module")
def sentences(corpus_path):
    pairs, _ = read_pairs(corpus_path)
    test = [en for en, _ in group_references(split_pairs(pairs)["test"])]
    return test[:: max(1, len(test) // N_PARITY)][:N_PARITY]


def _torch_greedy(model, ids: list[int]) -> list[int]:
    out = greedy_decode(model, torch.tensor([ids]))[0].tolist()
    return [i for i in out if i != model.config.pad_id]


def _torch_attention(model, ids, ys) -> dict[str, np.ndarray]:
    with torch.no_grad():
        _, attn = model(torch.tensor([ids]), torch.tensor([ys[:-1]]), return_attention=True)
    return {k: torch.cat(v).numpy() for k, v in attn.items()}  # (N, H, Tq, Tk)


# ----------------------------------------------------------------------- the graphs
def test_graphs_have_the_documented_inputs_and_outputs(exports, translator):
    c = translator.model.config
    for exported in exports.values():
        for path, inputs, outputs in (
            (exported.encoder, ox.ENCODER_INPUTS, ox.ENCODER_OUTPUTS),
            (exported.decoder, ox.DECODER_INPUTS, ox.DECODER_OUTPUTS),
        ):
            proto = onnx.load(str(path), load_external_data=False)
            assert proto.opset_import[0].version == ox.OPSET
            graph = proto.graph
            assert [i.name for i in graph.input] == list(inputs)
            assert [o.name for o in graph.output] == list(outputs)
            shapes = {
                i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]
                for i in graph.input
            }
            for name in ("src", "tgt", "memory"):
                if name in shapes:
                    assert shapes[name][0] == 1 and isinstance(shapes[name][1], str), shapes
            gate = "encoder_gates" if "encoder_gates" in shapes else "cross_gates"
            assert shapes[gate] == [
                c.n_encoder_layers if gate == "encoder_gates" else c.n_decoder_layers,
                c.n_heads,
            ]


def test_page_export_stores_each_large_weight_once_as_float16(exports, translator):
    page = exports["float16"]
    assert page.shared is not None and page.shared.is_file()
    float32 = {"model.positional.pe"}  # a buffer, not a weight: kept exact
    seen = {}
    for path in (page.encoder, page.decoder):
        for init in onnx.load(str(path), load_external_data=False).graph.initializer:
            if np.prod(init.dims) < ox.FLOAT16_MIN_ELEMENTS:
                continue
            assert init.data_location == onnx.TensorProto.EXTERNAL, init.name
            where = {e.key: e.value for e in init.external_data}
            assert where["location"] == ox.WEIGHTS_FILE
            want = onnx.TensorProto.FLOAT if init.name in float32 else onnx.TensorProto.FLOAT16
            assert init.data_type == want, init.name
            seen.setdefault(init.name, set()).add((where["offset"], where["length"]))
    # The tied embedding is in both graphs but stored once.
    assert len(seen["model.generator.weight__fp16"]) == 1
    n_params = sum(p.numel() for p in translator.model.parameters())
    assert page.shared.stat().st_size < 2.2 * n_params  # about 2 bytes per parameter


def test_every_input_is_used_and_inputs_are_not_merged(exports):
    # The exporter merges inputs given the same example tensor; export_onnx checks it.
    for exported in exports.values():
        graph = onnx.load(str(exported.decoder), load_external_data=False).graph
        used = {name for node in ox._all_nodes(graph) for name in node.input}
        assert set(ox.DECODER_INPUTS) <= used


# ----------------------------------------------------------------------- parity
def test_greedy_outputs_and_attention_match_pytorch(translator, references, runners, sentences):
    """≥ 200 test-split sentences, each export against the PyTorch model with its weights:
    identical greedy output, attention within 1e-4; the float16 export also against the
    float32 checkpoint (agreement and attention difference measured and bounded)."""
    tok = translator.tokenizer
    assert len(sentences) >= N_PARITY
    worst = {"float32": 0.0, "float16": 0.0, "float16 vs float32 checkpoint": 0.0}
    agree = 0
    for text in sentences:
        ids = tok.encode(text)
        want = {name: _torch_greedy(model, ids) for name, model in references.items()}
        for name, runner in runners.items():
            ys, attn = runner.translate(ids)
            assert tok.decode(ys) == tok.decode(want[name]), (name, text)
            assert ys == want[name], (name, text)
            reference = _torch_attention(references[name], ids, ys)
            diff = max(float(np.abs(attn[k] - reference[k]).max()) for k in KINDS)
            worst[name] = max(worst[name], diff)
            if name == "float16" and ys == want["float32"]:
                agree += 1
                reference = _torch_attention(references["float32"], ids, ys)
                diff = max(float(np.abs(attn[k] - reference[k]).max()) for k in KINDS)
                key = "float16 vs float32 checkpoint"
                worst[key] = max(worst[key], diff)
    print(
        f"\n{len(sentences)} sentences; float16 export = float32 checkpoint on {agree}; "
        f"attention max abs diff: {worst}"
    )
    assert worst["float32"] <= ATOL_SAME_WEIGHTS
    assert worst["float16"] <= ATOL_SAME_WEIGHTS
    assert worst["float16 vs float32 checkpoint"] <= ATOL_FLOAT16
    assert agree >= MIN_AGREEMENT_FLOAT16 * len(sentences)


def test_every_single_head_gate_matches_pytorch(translator, references, runners, sentences):
    """Switch each head of each kind and layer off alone: each export's greedy outputs are
    PyTorch's with that head off (same weights), exactly; the float16 export's agree with
    the float32 checkpoint's in all but near-ties."""
    model, tok = translator.model, translator.tokenizer
    c = model.config
    texts = sentences[:: max(1, len(sentences) // N_GATED)][:N_GATED]
    sources = [tok.encode(t) for t in texts]
    baseline = [_torch_greedy(model, ids) for ids in sources]
    changed = agree = total = 0
    for kind in KINDS:
        for layer in range(len(model.attention_modules(kind))):
            for head in range(c.n_heads):
                gate = torch.ones(c.n_heads)
                gate[head] = 0.0
                want = {}
                for name, reference in references.items():
                    reference.set_head_gate(kind, layer, gate)
                    try:
                        want[name] = [_torch_greedy(reference, ids) for ids in sources]
                    finally:
                        reference.reset_head_gates()
                off = [(kind, layer, head)]
                for name, runner in runners.items():
                    got = [runner.translate(ids, off)[0] for ids in sources]
                    assert got == want[name], (name, kind, layer, head)
                    if name == "float16":
                        agree += sum(g == w for g, w in zip(got, want["float32"]))
                        total += len(got)
                changed += want["float32"] != baseline
    print(f"\nsingle heads off: float16 export = float32 checkpoint on {agree}/{total}")
    # Switching a head off must do something somewhere, or the test proves nothing.
    assert changed >= 1
    assert agree >= MIN_AGREEMENT_FLOAT16 * total


# ----------------------------------------------------------------------- metadata
def test_metadata_mirrors_the_python_decoding_rules(translator, meta):
    c = translator.model.config
    assert meta["never_generate"] == sorted({c.pad_id, c.bos_id})
    assert set(meta["skip_on_decode"]) == translator.tokenizer._specials_to_skip
    assert meta["max_len"] == c.max_len and meta["n_heads"] == c.n_heads
    assert meta["vocab_size"] == translator.tokenizer.vocab_size


def test_page_colours_are_the_books_sequential_colour_map():
    from transformer_lib.views.live_model import colormap_stops

    block = re.search(r"var CMAP = \[(.*?)\];", LIVE_JS.read_text(encoding="utf-8"), re.S)
    stops = re.findall(r'"(#[0-9a-f]{6})"', block.group(1))
    assert stops == colormap_stops(len(stops))


def test_live_translator_html_marks_a_box():
    from transformer_lib.views.live_model import MARKER, live_translator, live_translator_html

    box = live_translator_html('Say "hi" <now>.', switches_open=False)
    assert MARKER in box and 'data-switches="closed"' in box
    assert "&quot;hi&quot; &lt;now&gt;" in box
    assert MARKER in live_translator(static=True).data
    assert MARKER not in live_translator(static=False).data
    assert "data-kind" not in box  # cross-attention first, by default
    assert 'data-kind="encoder"' in live_translator_html("Hi.", kind="encoder")
    with pytest.raises(ValueError, match="kind must be one of encoder, decoder, cross"):
        live_translator_html("Hi.", kind="self")


# ----------------------------------------------------------------------- built files
def _payload(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text[text.index("] = ") + 4 : text.rstrip().rindex(";")]


@pytest.mark.skipif(
    not (GENERATED / "model.js").is_file(), reason="run `make book` (or `make live`) first"
)
def test_built_browser_files_match_the_shipped_checkpoint():
    """The page's model.js was written from data/model.pt as it is now (else: `make live`)."""
    import hashlib

    for name in ox.BUNDLE_FILES:
        assert (GENERATED / name).is_file(), name
    model = json.loads(_payload(GENERATED / "model.js"))
    digest = hashlib.sha256(DEFAULT_CHECKPOINT.read_bytes()).hexdigest()
    assert model["meta"]["checkpoint_sha256"] == digest, "stale: run `make live`"
    graph = onnx.load_from_string(gzip.decompress(base64.b64decode(model["encoder"])))
    assert [i.name for i in graph.graph.input] == list(ox.ENCODER_INPUTS)
