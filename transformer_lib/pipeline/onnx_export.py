"""The translator as two ONNX graphs, so that a web browser can run it (onnxruntime-web).

The book's first page and chapter 11 translate in the reader's browser, with no Python
kernel: the static HTML loads the model exported here and runs it with onnxruntime-web
(WebAssembly). Two graphs, both for one sentence (batch 1) of any length 1..``max_len``:

* **encoder** — ``src (1, S)`` int64 ids and ``encoder_gates (N_enc, H)`` float →
  ``memory (1, S, D)`` and ``encoder_attention (N_enc, H, S, S)``;
* **decoder** — ``tgt (1, T)`` (``<bos>`` and the tokens chosen so far), ``memory``,
  ``src`` (for the source padding mask), ``decoder_gates (N_dec, H)`` and
  ``cross_gates (N_dec, H)`` → ``logits (1, V)`` of the *last* position,
  ``decoder_attention (N_dec, H, T, T)`` and ``cross_attention (N_dec, H, T, S)``.

The gates are the library's own head gates (:meth:`Transformer.set_head_gate`): 1 keeps
a head, 0 switches it off, applied to each head's output before W^O. Here they are graph
inputs, so the page can switch heads off without a second model. Both graphs are traced
through :meth:`Transformer.encode` and :meth:`Transformer.decode` with
``return_attention=True``, i.e. the readable attention path of chapter 3 (the fused
``F.scaled_dot_product_attention`` exports to an op onnxruntime rejects for
cross-attention, and would not give the weights anyway).

The decoder graph has no key/value cache: each step runs it on the whole prefix. For
the book's short sentences this costs little, and the last step's attention outputs are
exactly the maps of the finished translation (the rows of ``model(src, tgt[:, :-1],
return_attention=True)``).

By default the weights are stored as float16 and cast back to float32 inside the graph,
so all arithmetic is float32 and the files are half the size (the page must stay small).
The browser then runs the checkpoint with its weights rounded to float16:
:func:`with_stored_precision` gives that model in PyTorch, and its greedy translations are
the page's, exactly. Against the float32 checkpoint they can differ only where two
candidate words are nearly tied; ``tests/test_onnx_export.py`` measures how often
(figures in ``benchmarks/README.md``).

Build the browser files (``make book`` does this when ``data/model.pt`` changes)::

    python -m transformer_lib.pipeline.onnx_export --out _static/live/generated
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from ..components.masks import padding_mask
from ..components.model import Transformer
from .decoding import EXTRA_OUTPUT_TOKENS, _never_generate
from .tokenizer import UNKNOWN_SHARE_WARNING

__all__ = [
    "DECODER_INPUTS",
    "DECODER_OUTPUTS",
    "ENCODER_INPUTS",
    "ENCODER_OUTPUTS",
    "OPSET",
    "DecoderGraph",
    "EncoderGraph",
    "ExportedModel",
    "browser_metadata",
    "export_onnx",
    "never_generate_ids",
    "store_weights_as_float16",
    "with_stored_precision",
    "write_browser_bundle",
]

#: ONNX opset of the exported graphs (onnxruntime-web 1.30 runs it).
OPSET = 20
ENCODER_INPUTS = ("src", "encoder_gates")
ENCODER_OUTPUTS = ("memory", "encoder_attention")
DECODER_INPUTS = ("tgt", "memory", "src", "decoder_gates", "cross_gates")
DECODER_OUTPUTS = ("logits", "decoder_attention", "cross_attention")
#: Initializers with fewer elements stay float32 (LayerNorm vectors, biases are tiny).
FLOAT16_MIN_ELEMENTS = 1024
#: How the weights can be stored.
WEIGHT_FORMATS = ("float16", "float32")


@contextlib.contextmanager
def _gated(model: Transformer, kind: str, gates: Tensor) -> Iterator[None]:
    """Set the head gates of every layer of ``kind`` from ``gates (layers, H)``; restore after."""
    modules = model.attention_modules(kind)
    saved = [m.head_gate for m in modules]
    try:
        for layer in range(len(modules)):
            model.set_head_gate(kind, layer, gates[layer])
        yield
    finally:
        for m, gate in zip(modules, saved):
            m.head_gate = gate


class EncoderGraph(nn.Module):
    """``(src (1, S), encoder_gates (N, H))`` → ``(memory (1, S, D), weights (N, H, S, S))``."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, encoder_gates: Tensor) -> tuple[Tensor, Tensor]:
        with _gated(self.model, "encoder", encoder_gates):
            memory, _, weights = self.model.encode(src, return_attention=True)
        return memory, torch.cat(weights)  # N × (1, H, S, S) → (N, H, S, S)


class DecoderGraph(nn.Module):
    """One greedy step on the whole prefix: next-token logits ``(1, V)`` and the maps."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        src: Tensor,
        decoder_gates: Tensor,
        cross_gates: Tensor,
    ) -> tuple[Tensor, Tensor, Tensor]:
        src_mask = padding_mask(src, self.model.config.pad_id)  # (1, 1, 1, S)
        with _gated(self.model, "decoder", decoder_gates), _gated(self.model, "cross", cross_gates):
            logits, attn = self.model.decode(tgt, memory, src_mask, return_attention=True)
        # (1, V) for the last position; N × (1, H, T, ·) → (N, H, T, ·)
        return logits[:, -1], torch.cat(attn["decoder"]), torch.cat(attn["cross"])


@dataclass
class ExportedModel:
    """The files of one export: two graphs and, if shared, the weights file they read."""

    encoder: Path
    decoder: Path
    weights: str  # one of WEIGHT_FORMATS
    shared: Path | None = None  # WEIGHTS_FILE, next to the graphs, or None (weights inside)


#: Name of the weights file both graphs read when their weights are shared.
WEIGHTS_FILE = "weights.bin"


def _example_inputs(model: Transformer) -> tuple[tuple, tuple]:
    c = model.config
    n_enc, n_dec, H = c.n_encoder_layers, c.n_decoder_layers, c.n_heads
    first = max(c.pad_id, c.unk_id, c.bos_id, c.eos_id) + 1  # ordinary tokens
    S, T = min(7, c.max_len), min(5, c.max_len)
    src = torch.arange(first, first + S).clamp(max=c.vocab_size - 1)[None]  # (1, S)
    tgt = torch.cat([torch.tensor([c.bos_id]), torch.arange(first, first + T - 1)])[None]
    with torch.no_grad():
        memory = model.encode(src)[0]
    # Distinct tensors for every input: the exporter merges inputs given the same object.
    enc = (src, torch.ones(n_enc, H))
    dec = (tgt, memory, src.clone(), torch.ones(n_dec, H), torch.ones(n_dec, H))
    return enc, dec


def _export_graph(module, args, input_names, output_names, dynamic_shapes, path: Path) -> None:
    import warnings

    import onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on unused axis names etc.
        program = torch.onnx.export(
            module.eval(),
            args,
            dynamo=True,
            external_data=False,
            opset_version=OPSET,
            input_names=list(input_names),
            output_names=list(output_names),
            dynamic_shapes=dynamic_shapes,
            verbose=False,
        )
    model = program.model_proto
    graph = model.graph
    names = [i.name for i in graph.input]
    if names != list(input_names):
        raise RuntimeError(f"{path.name}: the exporter wrote inputs {names}, not {input_names}")
    used = {name for node in _all_nodes(graph) for name in node.input}
    unused = [n for n in names if n not in used]
    if unused:  # e.g. merged with another input of the same example value
        raise RuntimeError(f"{path.name}: inputs {unused} are not used by the graph")
    # Source locations of every node (a tenth of the file) are of no use to the page.
    for node in _all_nodes(graph):
        node.doc_string = ""
        del node.metadata_props[:]
    del graph.value_info[:]
    del model.metadata_props[:]
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def _all_nodes(graph) -> Iterator:
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _all_nodes(attr.g)
            for sub in attr.graphs:
                yield from _all_nodes(sub)


def export_onnx(
    model: Transformer,
    out_dir: str | os.PathLike,
    weights: str = "float16",
    share_weights: bool = True,
) -> ExportedModel:
    """Write ``encoder.onnx`` and ``decoder.onnx`` for ``model`` into ``out_dir``.

    Args:
        model: A :class:`Transformer` (any size: everything is read from its config).
        out_dir: Folder for the files (created if needed).
        weights: ``"float16"`` (default; half the size, cast to float32 in the graph; see
            :func:`with_stored_precision`) or ``"float32"`` (bit-for-bit the PyTorch
            weights).
        share_weights: Put the large weights of both graphs into one file,
            :data:`WEIGHTS_FILE`, each stored once (the shared embedding is used by both
            graphs); ONNX "external data" that both graphs point into. ``False`` keeps
            each graph self-contained.

    Returns:
        The paths written.
    """
    c = model.config
    if c.n_encoder_layers < 1 or c.n_decoder_layers < 1:
        raise ValueError("export_onnx needs at least one encoder and one decoder layer")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    was_training = model.training
    model.eval()
    enc_args, dec_args = _example_inputs(model)
    S = torch.export.Dim("S", min=1, max=c.max_len)
    T = torch.export.Dim("T", min=1, max=c.max_len)
    exported = ExportedModel(out / "encoder.onnx", out / "decoder.onnx", "float32")
    try:
        _export_graph(
            EncoderGraph(model),
            enc_args,
            ENCODER_INPUTS,
            ENCODER_OUTPUTS,
            {"src": {1: S}, "encoder_gates": None},
            exported.encoder,
        )
        _export_graph(
            DecoderGraph(model),
            dec_args,
            DECODER_INPUTS,
            DECODER_OUTPUTS,
            {
                "tgt": {1: T},
                "memory": {1: S},
                "src": {1: S},
                "decoder_gates": None,
                "cross_gates": None,
            },
            exported.decoder,
        )
    finally:
        model.train(was_training)
    return convert_export(exported, out, model, weights, share_weights)


def convert_export(
    exported: ExportedModel,
    out_dir: str | os.PathLike,
    model: Transformer,
    weights: str = "float16",
    share_weights: bool = True,
) -> ExportedModel:
    """Store a float32, self-contained export's weights as ``weights``, shared or not.

    :func:`export_onnx` ends with this; it is public so that one export can be turned
    into both precisions (the tests compare them) without tracing the model twice.
    ``out_dir`` may be the export's own folder (rewritten in place).
    """
    import onnx

    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {WEIGHT_FORMATS}, got {weights!r}")
    if exported.weights != "float32" or exported.shared is not None:
        raise ValueError("convert_export needs a float32 export with the weights inside")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    graphs = [onnx.load(str(exported.encoder)), onnx.load(str(exported.decoder))]
    if weights == "float16":
        buffers = {f"model.{name}" for name, _ in model.named_buffers()}  # e.g. the PE table
        for g in graphs:
            store_weights_as_float16(g, keep=buffers)
    result = ExportedModel(out / "encoder.onnx", out / "decoder.onnx", weights)
    if share_weights:
        result.shared = out / WEIGHTS_FILE
        result.shared.write_bytes(share_initializers(graphs, WEIGHTS_FILE))
    for g, path in zip(graphs, (result.encoder, result.decoder)):
        onnx.save(g, str(path))
    return result


def store_weights_as_float16(model, keep: set[str] | frozenset = frozenset()) -> None:
    """Store an ONNX model's large float32 weights as float16 (in place).

    Each float32 initializer of at least :data:`FLOAT16_MIN_ELEMENTS` elements whose name
    is not in ``keep`` becomes ``w__fp16`` (float16) followed by a ``Cast`` to float32
    named ``w``, so the rest of the graph is unchanged and computes in float32.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    kept, casts = [], []
    for init in graph.initializer:
        small = np.prod(init.dims) < FLOAT16_MIN_ELEMENTS
        if init.data_type != TensorProto.FLOAT or small or init.name in keep:
            kept.append(init)
            continue
        half = numpy_helper.from_array(
            numpy_helper.to_array(init).astype(np.float16), init.name + "__fp16"
        )
        kept.append(half)
        casts.append(
            helper.make_node(
                "Cast", [half.name], [init.name], to=TensorProto.FLOAT, name=f"{init.name}__cast"
            )
        )
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    onnx.checker.check_model(model)


def with_stored_precision(model: Transformer, weights: str = "float16") -> Transformer:
    """A copy of ``model`` with exactly the weights an export with ``weights`` stores.

    With ``"float16"`` every parameter of at least :data:`FLOAT16_MIN_ELEMENTS` elements
    is rounded to float16 (and kept as float32), as :func:`store_weights_as_float16`
    stores it; buffers (the positional table) and small parameters stay as they are. The
    exported graphs compute what this model computes, so it is PyTorch's reference for
    the page.
    """
    import copy

    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {WEIGHT_FORMATS}, got {weights!r}")
    rounded = copy.deepcopy(model)
    if weights == "float16":
        with torch.no_grad():
            for p in rounded.parameters():
                if p.numel() >= FLOAT16_MIN_ELEMENTS and p.dtype == torch.float32:
                    p.copy_(p.half().float())
    return rounded


def share_initializers(models: Sequence, location: str, align: int = 64) -> bytes:
    """Move the large initializers of ``models`` into one blob, each distinct tensor once.

    Every initializer of at least :data:`FLOAT16_MIN_ELEMENTS` elements becomes ONNX
    external data at ``location`` (offset and length into the returned bytes); equal
    tensors (same type, shape and bytes, e.g. the embedding in both graphs) share one
    copy. Offsets are multiples of ``align``. Returns the blob to write at ``location``.
    """
    import numpy as np
    from onnx import TensorProto, numpy_helper

    blob = bytearray()
    offsets: dict[bytes, tuple[int, int]] = {}
    for model in models:
        for init in model.graph.initializer:
            if np.prod(init.dims) < FLOAT16_MIN_ELEMENTS:
                continue
            data = numpy_helper.to_array(init).tobytes()  # little-endian raw bytes
            key = hashlib.sha256(repr((init.data_type, tuple(init.dims))).encode() + data).digest()
            if key not in offsets:
                blob.extend(b"\0" * (-len(blob) % align))
                offsets[key] = (len(blob), len(data))
                blob.extend(data)
            offset, length = offsets[key]
            dtype, dims, name = init.data_type, list(init.dims), init.name
            init.Clear()
            init.name, init.data_type = name, dtype
            init.dims.extend(dims)
            init.data_location = TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", offset), ("length", length)):
                entry = init.external_data.add()
                entry.key, entry.value = k, str(v)
    return bytes(blob)


def never_generate_ids(config) -> list[int]:
    """The ids greedy decoding never picks, read off :func:`decoding._never_generate` itself."""
    ruled_out = _never_generate(torch.zeros(1, config.vocab_size), config)[0]
    return [int(i) for i in torch.nonzero(torch.isinf(ruled_out)).flatten()]


def browser_metadata(model: Transformer, tokenizer_json: str) -> dict:
    """What the page needs besides the graphs: sizes, special ids and the decoding rules.

    The rules are read off the library's own code where it can be run (which ids
    greedy decoding rules out, which ids ``Tokenizer.decode`` drops), so that the page
    follows them when they change.
    """
    import tokenizers

    from .tokenizer import Tokenizer

    c = model.config
    tok = Tokenizer(tokenizers.Tokenizer.from_str(tokenizer_json))
    for name in ("pad", "unk", "bos", "eos"):
        if getattr(tok, f"{name}_id") != getattr(c, f"{name}_id"):
            raise ValueError(f"the tokenizer's {name} id differs from the model config's")
    specials = [t["id"] for t in json.loads(tokenizer_json).get("added_tokens", [])]
    return {
        "vocab_size": c.vocab_size,
        "d_model": c.d_model,
        "n_heads": c.n_heads,
        "n_encoder_layers": c.n_encoder_layers,
        "n_decoder_layers": c.n_decoder_layers,
        "max_len": c.max_len,
        "pad_id": c.pad_id,
        "unk_id": c.unk_id,
        "bos_id": c.bos_id,
        "eos_id": c.eos_id,
        # decoding.max_output_length: max(2, min(S + extra, max_len)) tokens incl. <bos>
        "extra_output_tokens": EXTRA_OUTPUT_TOKENS,
        # decoding._never_generate: logits set to -inf before the argmax
        "never_generate": never_generate_ids(c),
        # Tokenizer.decode (skip_special=True) drops these; <unk> stays visible
        "skip_on_decode": sorted(i for i in specials if tok.decode([i]) == ""),
        # tokenizer.warn_if_mostly_unknown: warn above this share of <unk> source tokens
        "unknown_share_warning": UNKNOWN_SHARE_WARNING,
    }


# --------------------------------------------------------------------------------------
# The files the page loads
# --------------------------------------------------------------------------------------

#: Global the generated scripts register their payload on.
BROWSER_GLOBAL = "LIVE_TRANSLATE_FILES"


def _script(name: str, payload: str) -> str:
    """A classic script that stores ``payload`` (a JSON value) under ``name``."""
    return (
        f"(window.{BROWSER_GLOBAL} = window.{BROWSER_GLOBAL} || {{}})"
        f"[{json.dumps(name)}] = {payload};\n"
    )


def _gz_b64(data: bytes) -> str:
    """gzip, then base64, as a JSON string (the page unpacks it with DecompressionStream)."""
    return json.dumps(base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii"))


#: The files :func:`write_browser_bundle` writes, in the order the page loads them.
BUNDLE_FILES = ("ort-loader.js", "ort-wasm.js", "tokenizers.js", "model.js")


def write_browser_bundle(
    checkpoint: str | os.PathLike,
    out_dir: str | os.PathLike,
    vendor_dir: str | os.PathLike | None = None,
    weights: str = "float16",
) -> list[Path]:
    """Write every file the in-browser translator loads into ``out_dir``.

    Each is a plain ``.js`` file, so that the page also works from ``file://`` (where
    browsers refuse ``fetch``); each stores its payload in
    ``window.LIVE_TRANSLATE_FILES[name]``. Binary payloads are gzip + base64 (the page
    unpacks them with ``DecompressionStream``).

    * ``model.js`` — the two graphs and their shared weights (:func:`export_onnx`),
      :func:`browser_metadata`, the tokenizer embedded in the checkpoint and the
      checkpoint's sha256;
    * ``ort-wasm.js`` — onnxruntime-web's WebAssembly binary, and ``ort-loader.js`` the ES
      module that instantiates it, as text (the page imports it from a ``blob:`` URL);
      onnxruntime-web itself (``ort.wasm.min.js``) is a plain script, loaded from the
      vendored folder;
    * ``tokenizers.js`` — ``@huggingface/tokenizers`` (a CommonJS file) wrapped as a
      script.

    The JavaScript comes from ``vendor_dir`` (``_static/vendor`` of the repository, see
    ``scripts/vendor_js.py``).
    """
    import tempfile

    from .checkpoints import load_model

    checkpoint = Path(checkpoint)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vendor = Path(vendor_dir) if vendor_dir else _repo_root() / "_static" / "vendor"
    model, ckpt = load_model(checkpoint)
    rec = ckpt.get("tokenizer")
    if not isinstance(rec, dict) or "json" not in rec:
        raise ValueError(f"{checkpoint} has no embedded tokenizer")
    tokenizer = json.loads(rec["json"])
    meta = browser_metadata(model, rec["json"])
    meta["weights"] = weights
    meta["checkpoint_sha256"] = hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    written = []

    def write(name: str, text: str) -> None:
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)

    ort = vendor / "onnxruntime-web"
    loader = (ort / "ort-wasm-simd-threaded.mjs").read_text(encoding="utf-8")
    write("ort-loader.js", _script("ort_mjs", json.dumps(loader)))
    wasm = gzip.decompress((ort / "ort-wasm-simd-threaded.wasm.gz").read_bytes())
    write("ort-wasm.js", _script("ort_wasm", _gz_b64(wasm)))
    cjs = (vendor / "tokenizers" / "tokenizers.min.cjs").read_text(encoding="utf-8")
    write(
        "tokenizers.js",
        "(function () {\nvar module = {exports: {}}, exports = module.exports;\n"
        + cjs
        + f"\n(window.{BROWSER_GLOBAL} = window.{BROWSER_GLOBAL} || {{}}).tokenizers"
        " = module.exports;\n})();\n",
    )
    with tempfile.TemporaryDirectory() as tmp:
        graphs = export_onnx(model, tmp, weights=weights, share_weights=True)
        parts = {
            "meta": json.dumps(meta),
            "tokenizer": json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":")),
            "encoder": _gz_b64(graphs.encoder.read_bytes()),
            "decoder": _gz_b64(graphs.decoder.read_bytes()),
            "weights_file": json.dumps(WEIGHTS_FILE),
            "weights": _gz_b64(graphs.shared.read_bytes()),
        }
    payload = "{\n" + ",\n".join(f"{json.dumps(k)}: {v}" for k, v in parts.items()) + "\n}"
    write("model.js", _script("model", payload))
    return written


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _main(argv: Sequence[str] | None = None) -> None:
    from .pretrained import DEFAULT_CHECKPOINT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    parser.add_argument("--out", default=str(_repo_root() / "_static" / "live" / "generated"))
    parser.add_argument("--vendor", default=None, help="vendored JavaScript (_static/vendor)")
    parser.add_argument("--weights", choices=WEIGHT_FORMATS, default="float16")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    for path in write_browser_bundle(args.checkpoint, args.out, args.vendor, args.weights):
        size, packed = path.stat().st_size, len(gzip.compress(path.read_bytes()))
        print(f"{size / 1e6:6.2f} MB ({packed / 1e6:5.2f} MB gzip)  {path}")


if __name__ == "__main__":
    _main()
