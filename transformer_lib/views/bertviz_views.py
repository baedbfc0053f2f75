"""Interactive attention views (bertviz) that work offline, in the book and in notebooks.

bertviz (Vig, 2019) draws attention with d3 and loads require.js, d3 and jQuery
from public CDNs. Without those hosts (the book's CI, a reader offline) its views stay
empty. The wrappers here return the same views as a self-contained
:class:`IPython.display.HTML`: d3 and jQuery are inlined from the copies vendored in the
repository (``_static/vendor/``), and bertviz's script is handed them through a tiny local
stand-in for ``require``, so nothing is fetched and no page-wide global is touched. The
same output works in the built book, in Jupyter/JupyterLab and in Colab.

Each view inlines about 330 KB of library code. If the vendored files are not found (the
package was installed without the repository checkout), the views fall back to bertviz's
own HTML, which loads the libraries from CDNs and so needs a network connection.

Used by the chapters that look inside attention heads. Shape legend: B batch, H heads,
S source length, T target length.

Example::

    logits, attn = model(src, tgt, return_attention=True)
    head_view(attn, encoder_tokens=src_tokens, decoder_tokens=tgt_tokens)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import torch

__all__ = ["head_view", "model_view", "VENDOR_DIR"]

#: Where the vendored JavaScript lives in a repository checkout.
VENDOR_DIR = Path(__file__).resolve().parents[2] / "_static" / "vendor"
_LIBRARIES = {"d3": "d3/d3.min.js", "jquery": "jquery/jquery.min.js"}
_KINDS = ("encoder", "decoder", "cross")

AttentionList = Sequence[Any]  # one (B, H, Tq, Tk) tensor (or array) per layer


def head_view(
    attention: Mapping[str, AttentionList] | AttentionList | None = None,
    tokens: Sequence[str] | None = None,
    *,
    encoder_attention: AttentionList | None = None,
    decoder_attention: AttentionList | None = None,
    cross_attention: AttentionList | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    batch_index: int = 0,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    include_layers: Sequence[int] | None = None,
    decimals: int = 4,
    offline: bool | None = None,
):
    """One layer at a time: lines from each query token to the tokens it attends to.

    Args:
        attention: either the ``attn`` dict returned by
            ``Transformer(..., return_attention=True)`` (keys ``"encoder"``, ``"decoder"``,
            ``"cross"``), or a list of per-layer self-attention tensors used with
            ``tokens``. Leave it out to pass the three lists by keyword instead.
        tokens: token strings for a single self-attention stack.
        encoder_attention: per layer, ``(B, H, S, S)``.
        decoder_attention: per layer, ``(B, H, T, T)``.
        cross_attention: per layer, ``(B, H, T, S)`` (decoder queries, encoder keys).
        encoder_tokens: the ``S`` source tokens, including special tokens.
        decoder_tokens: the ``T`` target tokens the decoder was fed.
        batch_index: which sentence of the batch to show.
        layer: layer selected when the view opens (default 0).
        heads: heads selected when the view opens (default all).
        include_layers: show only these layers (smaller output for long inputs).
        decimals: attention weights are rounded to this many decimals to keep the HTML small.
        offline: ``True`` requires the vendored libraries (raises if missing), ``False``
            loads them from a CDN, ``None`` (default) uses the vendored copies when found.

    Returns:
        ``IPython.display.HTML``; a notebook displays it when it is a cell's last value.
    """
    from bertviz import head_view as _head_view

    kwargs = _prepare(
        attention,
        tokens,
        encoder_attention,
        decoder_attention,
        cross_attention,
        encoder_tokens,
        decoder_tokens,
        batch_index,
        decimals,
        include_layers,
    )
    html = _head_view(
        **kwargs,
        layer=layer,
        heads=heads,
        include_layers=_opt_list(include_layers),
        html_action="return",
    ).data
    return _offline_html(html, "head", offline)


def model_view(
    attention: Mapping[str, AttentionList] | AttentionList | None = None,
    tokens: Sequence[str] | None = None,
    *,
    encoder_attention: AttentionList | None = None,
    decoder_attention: AttentionList | None = None,
    cross_attention: AttentionList | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    batch_index: int = 0,
    include_layers: Sequence[int] | None = None,
    include_heads: Sequence[int] | None = None,
    display_mode: str = "light",
    decimals: int = 4,
    offline: bool | None = None,
):
    """Every layer and head at once, as a grid of thumbnails; click one to enlarge it.

    Arguments as in :func:`head_view`, plus ``include_heads`` (show only these heads) and
    ``display_mode`` (``"light"`` or ``"dark"``).
    """
    from bertviz import model_view as _model_view

    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")
    kwargs = _prepare(
        attention,
        tokens,
        encoder_attention,
        decoder_attention,
        cross_attention,
        encoder_tokens,
        decoder_tokens,
        batch_index,
        decimals,
        include_layers,
    )
    html = _model_view(
        **kwargs,
        include_layers=_opt_list(include_layers),
        include_heads=_opt_list(include_heads),
        display_mode=display_mode,
        html_action="return",
    ).data
    return _offline_html(html, "model", offline)


# --------------------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------------------


def _opt_list(values: Sequence[int] | None) -> list[int] | None:
    return None if values is None else [int(v) for v in values]


def _prepare(
    attention,
    tokens,
    encoder_attention,
    decoder_attention,
    cross_attention,
    encoder_tokens,
    decoder_tokens,
    batch_index: int,
    decimals: int,
    include_layers: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Validate the inputs and turn them into bertviz's keyword arguments."""
    explicit = {
        "encoder": encoder_attention,
        "decoder": decoder_attention,
        "cross": cross_attention,
    }
    if isinstance(attention, Mapping):
        unknown = set(attention) - set(_KINDS)
        if unknown:
            raise ValueError(
                f"attention dict has unknown keys {sorted(unknown)}; expected some of {_KINDS}"
            )
        if any(v is not None for v in explicit.values()):
            raise ValueError(
                "pass the attention either as one dict or as encoder_/decoder_/cross_attention, "
                "not both"
            )
        explicit = {k: attention.get(k) for k in _KINDS}
        attention = None

    if attention is not None:  # a single self-attention stack
        if any(v is not None for v in explicit.values()):
            raise ValueError(
                "pass either `attention` + `tokens` (one self-attention stack) or the "
                "encoder_/decoder_/cross_attention lists, not both"
            )
        if tokens is None:
            raise ValueError("`tokens` is required with a list of self-attention tensors")
        layers = _layers("attention", attention, batch_index, decimals)
        _check_tokens("attention", layers, tokens, tokens, "tokens", "tokens")
        bad = [i for i in include_layers or () if not 0 <= i < len(layers)]
        if bad:
            raise ValueError(f"include_layers {bad} out of range for {len(layers)} layers")
        return {"attention": layers, "tokens": list(tokens)}

    if tokens is not None:
        raise ValueError(
            "`tokens` goes with a self-attention list; for an encoder-decoder pass "
            "encoder_tokens= and decoder_tokens="
        )
    if all(v is None for v in explicit.values()):
        raise ValueError(
            "no attention given: pass the model's attention dict, or encoder_attention= / "
            "decoder_attention= / cross_attention= (lists of (B, H, Tq, Tk) tensors)"
        )

    out: dict[str, Any] = {}
    n_layers = {}
    for kind, value in explicit.items():
        if value is None:
            continue
        layers = _layers(f"{kind}_attention", value, batch_index, decimals)
        n_layers[kind] = len(layers)
        query_tokens, query_name = (
            (encoder_tokens, "encoder_tokens")
            if kind == "encoder"
            else (decoder_tokens, "decoder_tokens")
        )
        key_tokens, key_name = (
            (decoder_tokens, "decoder_tokens")
            if kind == "decoder"
            else (encoder_tokens, "encoder_tokens")
        )
        _check_tokens(f"{kind}_attention", layers, query_tokens, key_tokens, query_name, key_name)
        out[f"{kind}_attention"] = layers
    if include_layers is None and len(set(n_layers.values())) > 1:
        raise ValueError(
            f"the layer counts differ between attention kinds ({n_layers}); the views show "
            "the same layers for every kind, so pass include_layers= with layers they all "
            "have, or show each kind in its own view"
        )
    if include_layers is not None:
        bad = [i for i in include_layers if not 0 <= i < min(n_layers.values())]
        if bad:
            raise ValueError(f"include_layers {bad} out of range: layer counts are {n_layers}")
    if encoder_tokens is not None and ("encoder_attention" in out or "cross_attention" in out):
        out["encoder_tokens"] = list(encoder_tokens)
    if decoder_tokens is not None and ("decoder_attention" in out or "cross_attention" in out):
        out["decoder_tokens"] = list(decoder_tokens)
    return out


def _layers(name: str, value, batch_index: int, decimals: int) -> list[torch.Tensor]:
    """Per-layer (1, H, Tq, Tk) float64 tensors for one batch element."""
    if isinstance(value, torch.Tensor) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(
            f"{name} must be a non-empty list with one (B, H, Tq, Tk) tensor per layer, "
            f"got {type(value).__name__}"
        )
    layers = []
    for i, layer in enumerate(value):
        t = torch.as_tensor(layer).detach()
        if t.dim() != 4:
            raise ValueError(
                f"{name}[{i}] has shape {tuple(t.shape)}; expected 4 dimensions (B, H, Tq, Tk). "
                "Pass the per-layer weights returned with need_weights/return_attention."
            )
        if not -t.shape[0] <= batch_index < t.shape[0]:
            raise IndexError(
                f"batch_index {batch_index} is out of range for {name}[{i}] with B={t.shape[0]}"
            )
        if layers and t.shape[1:] != layers[0].shape[1:]:
            raise ValueError(
                f"{name}[{i}] has shape {tuple(t.shape)} but {name}[0] has "
                f"{tuple(layers[0].shape)}; all layers must have the same (H, Tq, Tk)"
            )
        t = t[batch_index].unsqueeze(0).to(device="cpu", dtype=torch.float64)  # (1, H, Tq, Tk)
        layers.append(torch.round(t, decimals=decimals))
    return layers


def _check_tokens(name, layers, query_tokens, key_tokens, query_name, key_name) -> None:
    _, _, n_query, n_key = layers[0].shape
    for tokens, tname, n, axis in (
        (query_tokens, query_name, n_query, "query (Tq)"),
        (key_tokens, key_name, n_key, "key (Tk)"),
    ):
        if tokens is None:
            raise ValueError(f"{tname} is required with {name}")
        if isinstance(tokens, str):
            raise TypeError(f"{tname} must be a list of token strings, not one string")
        if len(tokens) != n:
            raise ValueError(
                f"{name} has {n} {axis} positions but {tname} has {len(tokens)} tokens "
                f"({list(tokens)[:12]}{' ...' if len(tokens) > 12 else ''}). Pass exactly the "
                "tokens the model saw, special tokens included and padding removed."
            )


# --------------------------------------------------------------------------------------
# Making bertviz's HTML self-contained
# --------------------------------------------------------------------------------------

_REQUIRE_TAG = re.compile(r"<script\s+src=\"https?://[^\"]*require[^\"]*\"></script>", re.I)
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\);", re.S)
_MODEL_VIEW_WIDTH = re.compile(r"const DIV_WIDTH = \d+;")
_FIT_WIDTH = (
    "const DIV_WIDTH = Math.min(970, (document.getElementById(params.root_div_id) || {})"
    ".clientWidth || 970);"
)
# bertviz's menus sit after plain text ("Layer:", "Attention:"), which names them for the
# eye only; a screen reader needs a name on the menu itself.
_MENU_NAMES = {
    '<select id="layer">': '<select id="layer" aria-label="Layer shown">',
    '<select id="filter">': '<select id="filter" aria-label="Attention shown '
    '(encoder self, decoder self or cross)">',
}
# bertviz's head squares (head view) and thumbnails (model view) answer mouse clicks
# only: make each a button that Enter and Space press too, named for what it changes.
_KEYBOARD_PATCHES = {
    "head": [
        (
            '        checkbox.on("dblclick", function (d, i) {',
            '        checkbox.attr("tabindex", 0).attr("role", "button")\n'
            '            .attr("aria-label", (d, i) => "head " + i + ": show or hide its '
            'lines (Shift+Enter: show only this head)")\n'
            '            .on("keydown", function (d, i) {\n'
            "                const e = d3.event;\n"
            '                if (e.key !== "Enter" && e.key !== " ") return;\n'
            "                e.preventDefault();\n"
            '                checkbox.on(e.shiftKey ? "dblclick" : "click").call(this, d, i);\n'
            "            });\n"
            '        checkbox.on("dblclick", function (d, i) {',
        ),
        (
            '.attr("fill", (d, i) => d ? headColors(i): lighten(headColors(i)));',
            '.attr("fill", (d, i) => d ? headColors(i): lighten(headColors(i)))'
            '.attr("aria-pressed", d => String(Boolean(d)));',
        ),
    ],
    "model": [
        (
            '            clickRegion.on("click", function (d, index) {',
            '            clickRegion.attr("tabindex", 0).attr("role", "button")\n'
            '                .attr("aria-label", "layer " + layerIndex + ", head " + '
            'headIndex + ": show or hide this map enlarged")\n'
            '                .on("keydown", function (d, index) {\n'
            "                    const e = d3.event;\n"
            '                    if (e.key !== "Enter" && e.key !== " ") return;\n'
            "                    e.preventDefault();\n"
            '                    clickRegion.on("click").call(this, d, index);\n'
            "                });\n"
            '            clickRegion.on("click", function (d, index) {',
        ),
    ],
}
_VIS_SCRIPT = re.compile(r"<script type=\"text/javascript\">\n(.*)\n</script>\s*$", re.S)


@cache
def _vendored(name: str) -> str | None:
    path = VENDOR_DIR / _LIBRARIES[name]
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _escape_script(js: str) -> str:
    # An HTML parser ends an inline script at `</script`, and `<!--` changes how it looks
    # for that end. Both can only occur inside JS strings or regexes here (e.g. a token),
    # where `<\/` and `<\!` mean the same.
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.I)
    return js.replace("<!--", "<\\!--")


def _offline_html(html: str, view: str, offline: bool | None):
    from IPython.display import HTML

    for plain, named in _MENU_NAMES.items():
        html = html.replace(plain, named)
    original = html
    html, n = _REQUIRE_TAG.subn("", html)
    match = _VIS_SCRIPT.search(html)
    if n != 1 or match is None:
        raise RuntimeError(
            "bertviz's HTML has an unexpected layout (this wrapper was written for "
            "bertviz 1.4); pin bertviz==1.4.1"
        )
    body, vis_js = html[: match.start()], match.group(1)
    # The CDN paths given to require.config are not needed by the local stand-in below.
    vis_js = _REQUIRE_CONFIG.sub("", vis_js, count=1)
    for plain, usable in _KEYBOARD_PATCHES[view]:
        if vis_js.count(plain) != 1:
            raise RuntimeError(
                f"bertviz's {view} view has an unexpected layout (no {plain.strip()[:40]!r}); "
                "pin bertviz==1.4.1"
            )
        vis_js = vis_js.replace(plain, usable)
    if view == "model":
        # bertviz draws the model view 970 px wide, wider than a book page's text column:
        # draw it as wide as the column it sits in instead (the thumbnails shrink).
        vis_js, n_width = _MODEL_VIEW_WIDTH.subn(_FIT_WIDTH, vis_js)
        if n_width != 1:
            raise RuntimeError(
                "bertviz's model view has an unexpected layout (no DIV_WIDTH); pin bertviz==1.4.1"
            )

    sources = {name: _vendored(name) for name in _LIBRARIES}
    use_vendored = all(sources.values()) if offline is None else offline
    if use_vendored and not all(sources.values()):
        missing = [str(VENDOR_DIR / _LIBRARIES[n]) for n, s in sources.items() if s is None]
        raise FileNotFoundError(
            f"vendored JavaScript not found: {missing}. Run this from a checkout of the "
            "book's repository (pip install -e .), or pass offline=False to use a CDN."
        )
    if not use_vendored:  # bertviz's own page, which loads its libraries from CDNs
        return HTML(f'<div class="bertviz bertviz-{view}-view">{original}</div>')

    # bertviz's script calls require.config(...) and requirejs(['jquery', 'd3'], fn).
    # A local stand-in answers those calls with the libraries loaded just above it. Each
    # library is evaluated as a CommonJS module (its `module.exports` is kept), so neither
    # defines an AMD module nor overwrites `window.$` or `window.d3`.
    loaders = "".join(
        f"libs[{name!r}] = load(function (module, exports, define, require) {{\n"
        f"{sources[name]}\n}});\n"
        for name in _LIBRARIES
    )
    script = (
        "(function () {\n"
        "var libs = {};\n"
        "function load(factory) { var module = {exports: {}};"
        " factory(module, module.exports, undefined, undefined); return module.exports; }\n"
        f"{loaders}"
        "var shim = function (deps, callback) {"
        " callback.apply(null, deps.map(function (d) { return libs[d]; })); };\n"
        "shim.config = function () {};\n"
        f"(function (require, requirejs, define) {{\n{vis_js}\n}})(shim, shim, undefined);\n"
        "})();"
    )
    wrapper_id = f"tlib-bertviz-{uuid.uuid4().hex[:12]}"
    return HTML(
        f'<div class="bertviz bertviz-{view}-view" id="{wrapper_id}">{body}'
        f'<script type="text/javascript">\n{_escape_script(script)}\n</script></div>'
    )
