"""The offline bertviz wrappers: self-contained HTML, clear errors for mismatched inputs."""

import re

import pytest
import torch

pytest.importorskip("bertviz")
pytest.importorskip("IPython")

from transformer_lib.views import bertviz_views  # noqa: E402
from transformer_lib.views.bertviz_views import head_view, model_view  # noqa: E402

torch.set_num_threads(1)

S, T, H, N_LAYERS, B = 5, 4, 2, 2, 3
SRC = ["<bos>", "ein", "Hund", ".", "<eos>"]
TGT = ["<bos>", "a", "dog", "."]
VIEWS = [head_view, model_view]


def _attn(q: int, k: int, n_layers: int = N_LAYERS) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(q * 100 + k)
    return [torch.softmax(torch.randn(B, H, q, k, generator=g), dim=-1) for _ in range(n_layers)]


def _model_attention() -> dict[str, list[torch.Tensor]]:
    return {"encoder": _attn(S, S), "decoder": _attn(T, T), "cross": _attn(T, S)}


def _script_srcs(html: str) -> list[str]:
    return re.findall(r"<script[^>]*\bsrc\s*=\s*[\"']?([^\"' >]+)", html, flags=re.I)


needs_vendor = pytest.mark.skipif(
    not (bertviz_views.VENDOR_DIR / "d3" / "d3.min.js").is_file(),
    reason="vendored JavaScript missing: run `python scripts/vendor_js.py`",
)


@needs_vendor
@pytest.mark.parametrize("view", VIEWS)
def test_html_is_self_contained(view):
    html = view(_model_attention(), encoder_tokens=SRC, decoder_tokens=TGT).data
    assert _script_srcs(html) == []
    assert not re.search(r"https?://[^\"' ]*(cdn|unpkg)", html), "a CDN URL is left in the HTML"
    assert "d3js.org v5" in html and "jQuery v3" in html  # both libraries inlined
    assert 'class="bertviz' in html
    # One inline script, closed once: the inlined libraries must not end it early, nor
    # contain "<!--", which changes how an HTML parser finds the end of a script.
    assert html.lower().count("</script") == 1 and html.rstrip().endswith("</script></div>")
    assert "<!--" not in html
    for token in SRC + TGT:
        assert token.strip("<>") in html


@needs_vendor
def test_keyword_lists_and_subset_of_kinds():
    attn = _model_attention()
    html = head_view(
        encoder_attention=attn["encoder"],
        cross_attention=attn["cross"],
        encoder_tokens=SRC,
        decoder_tokens=TGT,
        batch_index=2,
        layer=1,
    ).data
    assert '"name": "Encoder"' in html and '"name": "Cross"' in html
    assert '"name": "Decoder"' not in html


@needs_vendor
def test_self_attention_stack_and_rounding():
    html = model_view(_attn(S, S), SRC, decimals=2).data
    weights = re.findall(r"\d\.\d+", html.split('"attention":', 1)[1].split('"left_text"')[0])
    assert weights and all(len(w.split(".")[1]) <= 2 for w in weights)


def test_cdn_fallback_when_not_offline():
    html = head_view(_attn(S, S), SRC, offline=False).data
    assert any(src.startswith("https://") for src in _script_srcs(html))


def test_offline_required_but_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(bertviz_views, "VENDOR_DIR", tmp_path)
    bertviz_views._vendored.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="vendored JavaScript not found"):
            head_view(_attn(S, S), SRC, offline=True)
    finally:
        bertviz_views._vendored.cache_clear()


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        # token counts that do not match the attention's query/key lengths
        ({"encoder_tokens": SRC[:-1], "decoder_tokens": TGT}, ValueError, "encoder_tokens has 4"),
        (
            {"encoder_tokens": SRC, "decoder_tokens": TGT + ["x"]},
            ValueError,
            "decoder_tokens has 5",
        ),
        ({"encoder_tokens": SRC}, ValueError, "decoder_tokens is required"),
        ({"encoder_tokens": "ein Hund", "decoder_tokens": TGT}, TypeError, "list of token"),
        ({"encoder_tokens": SRC, "decoder_tokens": TGT, "batch_index": B}, IndexError, "out of"),
    ],
)
def test_mismatched_tokens(view, kwargs, error, match):
    with pytest.raises(error, match=match):
        view(_model_attention(), **kwargs)


@pytest.mark.parametrize("view", VIEWS)
def test_bad_shapes(view):
    attn = _model_attention()
    with pytest.raises(ValueError, match=r"expected 4 dimensions \(B, H, Tq, Tk\)"):
        view({"encoder": [a[0] for a in attn["encoder"]]}, encoder_tokens=SRC)
    with pytest.raises(ValueError, match="all layers must have the same"):
        view({"encoder": [attn["encoder"][0], attn["encoder"][1][:, :1]]}, encoder_tokens=SRC)
    with pytest.raises(ValueError, match="unknown keys"):
        view({"self": attn["encoder"]}, encoder_tokens=SRC)
    with pytest.raises(TypeError, match="one \\(B, H, Tq, Tk\\) tensor per layer"):
        view(encoder_attention=attn["encoder"][0], encoder_tokens=SRC)
    with pytest.raises(ValueError, match="no attention given"):
        view(encoder_tokens=SRC)


def test_layer_counts_must_agree():
    attn = {"encoder": _attn(S, S, 3), "cross": _attn(T, S, 2)}
    with pytest.raises(ValueError, match="layer counts differ"):
        head_view(attn, encoder_tokens=SRC, decoder_tokens=TGT)
    html = head_view(attn, encoder_tokens=SRC, decoder_tokens=TGT, include_layers=[0, 1])
    assert "bertviz" in html.data
    with pytest.raises(ValueError, match="out of range"):
        head_view(attn, encoder_tokens=SRC, decoder_tokens=TGT, include_layers=[2])


def test_ambiguous_arguments():
    attn = _model_attention()
    with pytest.raises(ValueError, match="not both"):
        head_view(attn, encoder_attention=attn["encoder"], encoder_tokens=SRC)
    with pytest.raises(ValueError, match="`tokens` is required"):
        head_view(attn["encoder"])
    with pytest.raises(ValueError, match="encoder_tokens= and decoder_tokens="):
        head_view(attn, SRC)
    with pytest.raises(ValueError, match="display_mode"):
        model_view(attn, encoder_tokens=SRC, decoder_tokens=TGT, display_mode="blue")


@needs_vendor
def test_tokens_cannot_break_out_of_the_script():
    tokens = ["<bos>", "</script>", "<!--", "x", "<eos>"]
    html = head_view(_attn(S, S), tokens).data
    assert html.lower().count("</script") == 1
    assert "<!--" not in html
