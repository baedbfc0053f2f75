"""The interactive explorers (transformer_lib.views.explorers), without a browser.

Static explorers: the frames are in nested ``Stack`` widgets whose ``selected_index`` is
jslinked to the controls (so the browser switches frames with no kernel), one frame per
state, all different. Live explorers: the callbacks redraw, and bad input gives a message
instead of a traceback. The browser side is in tests/browser/test_pages.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

widgets = pytest.importorskip("ipywidgets")

from figure_text import FRAME_COLUMN_PX, smallest_text_css_px  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402
from widget_tree import find_widgets, shipped_or_random_translator  # noqa: E402

from transformer_lib.views import explorers  # noqa: E402
from transformer_lib.views.explorers import (  # noqa: E402
    ablation,
    lr_schedule,
    masks,
    positions,
    temperature,
    training_snapshots,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def translator():
    return shipped_or_random_translator()


# --------------------------------------------------------------------------- helpers
def _frames(stack) -> list[bytes]:
    """The PNG bytes of every leaf frame under a (nested) Stack, in order."""
    out = []
    for child in stack.children:
        out += _frames(child) if isinstance(child, widgets.Stack) else [bytes(child.value)]
    return out


def _check_static(box, n_expected: int | None = None) -> list[bytes]:
    assert "static-explorer" in box._dom_classes
    stacks = find_widgets(box, widgets.Stack)
    assert box.stack is stacks[0]
    frames = _frames(box.stack)
    assert len(frames) == box.frame_count
    if n_expected is not None:
        assert box.frame_count == n_expected
    assert box.frame_count <= 40, "keep the page light"
    assert all(f.startswith(PNG_MAGIC) for f in frames)
    assert len(set(frames)) == len(frames), "two states render the same frame"
    assert max(len(f) for f in frames) < 80_000, "frames should be small PNGs"
    # Every Stack is the target of a jslink from one of the controls; sizes match.
    controls = list(box.controls.values())
    targets = {}
    for link in box.links:
        assert isinstance(link, Link)
        (source, attr), (target, target_attr) = link.source, link.target
        assert target_attr == "selected_index"
        assert any(source is c for c in controls)
        assert attr == ("value" if isinstance(source, widgets.IntSlider) else "index")
        targets.setdefault(id(target), []).append(source)
        n_states = source.max + 1 if isinstance(source, widgets.IntSlider) else len(source.options)
        assert n_states == len(target.children)
        assert target.selected_index == getattr(source, attr)
    assert {id(s) for s in stacks} == set(targets), "a Stack without a control"
    # The first slider (the one browser tests move) must select frames.
    sliders = [c for c in controls if isinstance(c, (widgets.IntSlider, widgets.SelectionSlider))]
    assert sliders and any(sliders[0] is s for ss in targets.values() for s in ss)
    _check_frames_described_and_readable(box)
    return frames


def _check_frames_described_and_readable(box) -> None:
    """Each frame has its own description (in the page's hidden data, in frame order) and
    may shrink only down to the width at which its smallest text is 9 CSS px."""
    import html
    import re

    from transformer_lib.views.explorers.frames import MIN_TEXT_PX, readable_width
    from transformer_lib.views.text_size import png_text_size

    images = find_widgets(box.stack, widgets.Image)
    assert len(images) == box.frame_count == len(box.frame_descriptions)
    order = [next(c for c in im._dom_classes if c.startswith("frame-")) for im in images]
    assert order == [f"frame-{k}" for k in range(len(images))]
    assert all("explorer-frame" in im._dom_classes for im in images)
    assert len(set(box.frame_descriptions)) == len(images), "two frames are described alike"
    (hidden,) = [
        c for c in box.children if isinstance(c, widgets.HTML) and "explorer-alt" in c.value
    ]
    data = re.search(r"data-frames='([^']*)'", hidden.value).group(1)
    assert json.loads(html.unescape(data)) == box.frame_descriptions
    for image in images:
        png = bytes(image.value)
        width, natural = readable_width(png), int.from_bytes(png[16:20], "big")
        if width is None:
            assert image.layout.max_width == "100%"
            continue
        assert image.layout.max_width == f"max(100%, {width}px)"
        assert width <= natural
        assert png_text_size(png) * width / natural >= MIN_TEXT_PX - 1e-6


def _check_live(box) -> None:
    assert "live-explorer" in box._dom_classes
    assert bytes(box.image.value).startswith(PNG_MAGIC)
    assert "Could not" not in box.message.value


def _png(box) -> bytes:
    return bytes(box.image.value)


def test_explorer_modules_use_only_the_public_frames_interface():
    """What an explorer needs from frames.py is its public, documented API."""
    import ast
    from pathlib import Path

    from transformer_lib.views.explorers import frames

    folder = Path(frames.__file__).parent
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "frames" and node.level == 1:
                for alias in node.names:
                    assert not alias.name.startswith("_"), f"{path.name} imports {alias.name}"
                    assert alias.name in frames.__all__, f"{path.name}: {alias.name}"
    for name in frames.__all__:
        obj = getattr(frames, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__) > 40, f"frames.{name} has no docstring"


def test_readable_width_keeps_the_smallest_text_at_nine_pixels():
    from transformer_lib.views.explorers.frames import encode_png, readable_width
    from transformer_lib.views.text_size import with_text_size

    png = encode_png(np.zeros((50, 600, 3), dtype=np.uint8), palette=False)
    assert readable_width(png) is None  # no record: nothing known
    assert readable_width(with_text_size(png, [])) is None  # no text
    assert readable_width(with_text_size(png, [12.0, 15.0])) == 451  # 600 * 9 / 12, + 1
    assert readable_width(with_text_size(png, [8.0])) == 600  # never wider than drawn
    assert readable_width(with_text_size(png, [10.0]), min_text_px=12) == 600


def test_describe_frame_says_each_controls_setting():
    from transformer_lib.views.explorers.frames import describe_frame

    size = widgets.ToggleButtons(options=["128 (tiny)", "512 (base)"], description="d_model")
    steps = widgets.SelectionSlider(options=["100", "4,000"], description="warm-up")
    head = widgets.IntSlider(min=0, max=3, description="head")
    assert describe_frame([size, steps], (1, 0)) == "d_model: 512 (base); warm-up: 100"
    assert describe_frame([head], (2,)) == "head: 2"


def test_static_explorer_refuses_frames_that_do_not_match_the_controls():
    from transformer_lib.views.explorers.frames import encode_png, static_explorer

    png = encode_png(np.zeros((4, 4, 3), dtype=np.uint8), palette=False)
    head = widgets.IntSlider(min=0, max=2, description="head")
    with pytest.raises(ValueError, match="2 frames at level 0, but control 'head' has 3"):
        static_explorer("t", "d", [head], {"head": head}, [head], [png, png], alt="a frame")
    with pytest.raises(ValueError, match="describe its frames"):
        static_explorer("t", "d", [head], {"head": head}, [head], [png] * 3, alt=" ")


@pytest.fixture
def few_states(monkeypatch):
    """Fewer precomputed states than the book uses: the structure is the same, the test fast."""
    monkeypatch.setattr(temperature, "_STATIC_DKS", (4, 64))
    monkeypatch.setattr(positions, "_PE_SIZES", (32, 128))
    monkeypatch.setattr(positions, "_PE_FRACTIONS", positions._PE_FRACTIONS[:3])
    monkeypatch.setattr(lr_schedule, "_LR_SIZES", lr_schedule._LR_SIZES[:2])
    monkeypatch.setattr(lr_schedule, "_LR_WARMUPS", (400, 4000))
    full = ablation._ablations
    monkeypatch.setattr(ablation, "_ablations", lambda n, h: full(n, h)[:3])


SMALL_BATCH = (("<bos>", "Hallo", "!", "<pad>"), ("<bos>", "Ich", "bin", "da"))


# --------------------------------------------------------------------------- mode switch
@pytest.mark.parametrize(
    "value, expected", [("1", True), ("true", True), ("0", False), ("", False), (None, False)]
)
def test_static_mode_follows_the_environment(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(explorers.STATIC_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(explorers.STATIC_ENV_VAR, value)
    assert explorers.static_mode() is expected


def test_environment_chooses_the_version(monkeypatch, few_states):
    monkeypatch.setattr(lr_schedule, "_LR_SIZES", lr_schedule._LR_SIZES[:1])
    monkeypatch.setenv(explorers.STATIC_ENV_VAR, "1")
    assert "static-explorer" in explorers.lr_schedule_explorer()._dom_classes
    assert "live-explorer" in explorers.lr_schedule_explorer(static=False)._dom_classes
    monkeypatch.setenv(explorers.STATIC_ENV_VAR, "0")
    assert "live-explorer" in explorers.lr_schedule_explorer()._dom_classes
    assert "static-explorer" in explorers.lr_schedule_explorer(static=True)._dom_classes


def test_import_does_not_need_ipywidgets():
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import transformer_lib, transformer_lib.views.explorers as w\n"
        "try:\n    w.temperature_explorer()\nexcept ImportError as e:\n    print('msg:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install" in out.stdout


def test_the_books_frame_counts_stay_modest():
    n_layers, n_heads = 2, 4  # the shipped tiny model
    counts = {
        "temperature": len(temperature._STATIC_DKS),
        "positional": len(positions._PE_SIZES) * len(positions._PE_FRACTIONS),
        "lr": len(lr_schedule._LR_SIZES) * len(lr_schedule._LR_WARMUPS),
        "mask": 2 * 2 * len(masks.MASK_SENTENCES),
        "attention": len(explorers.EXAMPLE_SENTENCES) * 3 * n_layers,
        "ablation": len(ablation._ablations(n_layers, n_heads)),
        "training snapshots": training_snapshots.MAX_FRAMES,
    }
    assert all(2 <= n <= 40 for n in counts.values()), counts


# --------------------------------------------------------------------------- static versions
def test_temperature_static(few_states):
    box = explorers.temperature_explorer(static=True)
    _check_static(box, n_expected=2)
    _check_alt_text(box)
    assert box.controls["d_k"].options == (("4", 4), ("64 (the paper's)", 64))
    assert box.controls["d_k"].value == 64
    # Widening sharpens the unscaled softmax; divided by √d_k it keeps its spread.
    peaks = [temperature._peaks(6, d, d**0.5, 1) for d in (4, 16, 64, 256, 1024)]
    raw, scaled = zip(*peaks)
    assert all(a < b for a, b in zip(raw, raw[1:])) and raw[-1] > 0.9  # the default seed
    assert max(scaled) - min(scaled) < 0.1 and max(scaled) < 0.5
    assert box.frame_descriptions[1].startswith("d_k = 64: mean largest weight")


def test_temperature_names_its_random_vectors_neutrally():
    import math

    fig = temperature._temperature_figure(6, 64, math.sqrt(64), 0)
    unscaled, scaled = fig.axes[:2]
    for heatmap in (unscaled, scaled):
        assert [t.get_text() for t in heatmap.get_yticklabels()] == [f"q{i}" for i in range(6)]
        assert [t.get_text() for t in heatmap.get_xticklabels()] == [f"k{i}" for i in range(6)]
    assert "unscaled" in unscaled.get_title()
    assert "τ = 8 = √d_k" in scaled.get_title()
    assert "random" in fig.get_suptitle() and "d_k = 64" in fig.get_suptitle()
    with pytest.raises(ValueError, match="at least two"):
        explorers.temperature_explorer(1, static=True)


def test_positional_encoding_static(few_states):
    box = explorers.positional_encoding_explorer(static=True)
    _check_static(box, n_expected=2 * 3)
    assert box.controls["d_model"].index == 1  # 128, the default


def test_lr_schedule_static(few_states):
    box = explorers.lr_schedule_explorer(static=True)
    _check_static(box, n_expected=2 * 2)


def test_lr_schedule_buttons_and_labels_fit():
    # the d_model buttons are 130 px wide: labels of more than 12 characters were cut off
    assert all(len(label) <= 12 for _, label in lr_schedule._LR_SIZES)
    for d_model, warmup in [(128, 100), (512, 100), (128, 8000), (1024, 2000)]:
        fig = lr_schedule._lr_figure(d_model, warmup, 1.0, 20_000)
        fig.draw_without_rendering()
        ax = fig.axes[0]
        boxes = [t.get_window_extent() for t in ax.texts]  # peak and warm-up labels
        boxes.append(ax.get_legend().get_window_extent())
        for i, box in enumerate(boxes):
            assert not any(box.overlaps(other) for other in boxes[i + 1 :]), (d_model, warmup)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        named = any(t.get_text().startswith("warm-up ends") for t in ax.texts)
        assert named != (f"warm-up ends (step {warmup:,})" in legend)  # in one place


def test_mask_static():
    box = explorers.mask_explorer(SMALL_BATCH[:1], static=True)
    _check_static(box, n_expected=2 * 2 * 1)
    # padding x causal x sentence: three levels of nesting
    assert all(isinstance(c, widgets.Stack) for c in box.stack.children)
    assert all(isinstance(cc, widgets.Stack) for c in box.stack.children for cc in c.children)


def test_mask_batch_has_the_tokenizers_tokens():
    from transformer_lib.pipeline.tokenizer import Tokenizer

    tok = Tokenizer.load()
    batch = masks.mask_batch()
    assert len(batch) == len(masks.MASK_SENTENCES) and len({len(r) for r in batch}) == 1
    width = len(batch[0])
    for row, sentence in zip(batch, masks.MASK_SENTENCES):
        # the decoder input tgt[:, :-1] of collate's batch: "▁Ich", not "Ich"
        full = ["<bos>", *tok.tokens(sentence), "<eos>"]
        assert row == (full + ["<pad>"] * width)[:width]
    assert any(t == "<pad>" for row in batch for t in row)
    assert any(t == "<eos>" for row in batch for t in row)  # a shorter target keeps it


def test_mask_frame_text_is_readable_and_not_covered():
    """Cell numbers and labels >= 11 CSS px; the colour bar stays clear of the title."""
    from transformer_lib.views.explorers.frames import figure_to_png
    from transformer_lib.views.text_size import png_text_size

    fig = masks._mask_figure(masks.mask_batch(), True, True, 0)
    png = figure_to_png(fig)
    assert int.from_bytes(png[16:20], "big") <= 688  # shown at full size
    assert png_text_size(png) >= 11
    weights_ax = next(ax for ax in fig.axes if ax.get_title() == "Attention weights")
    assert weights_ax.texts and min(t.get_fontsize() for t in weights_ax.texts) >= 10
    renderer = fig.canvas.get_renderer()
    title = weights_ax.title.get_window_extent(renderer)
    colorbar = weights_ax.images[0].colorbar.ax.get_window_extent(renderer)
    assert title.x1 <= colorbar.x0 or title.y1 <= colorbar.y0 or title.y0 >= colorbar.y1


def test_attention_static(translator):
    sentences = explorers.EXAMPLE_SENTENCES[:1]
    box = explorers.attention_explorer(translator, sentences, static=True)
    n_layers = translator.model.config.n_encoder_layers
    _check_static(box, n_expected=len(sentences) * 3 * n_layers)
    assert box.controls["sentence"].disabled
    notes = [c.value for c in box.children if isinstance(c, widgets.HTML)]
    assert any(explorers.KERNEL_NOTE in n for n in notes)


def test_attention_cross_rows_are_the_tokens_being_written(translator):
    from transformer_lib.views.explorers import attention as attention_module
    from transformer_lib.views.explorers.model_runs import _translate

    run = _translate(translator, explorers.EXAMPLE_SENTENCES[0])
    drawn = {}

    class Grid:
        def render(self, mats, q, k, *, title, **kw):
            drawn.update(q=list(q), k=list(k), title=title)
            return b""

    attention_module._attention_png(Grid(), run, "cross", 0, None, False)
    # row i reads <bos> + translation[i] and writes translation[i], <eos> last
    assert drawn["q"] == run.written_tokens and drawn["q"][:-1] == run.tgt_tokens[1:]
    assert drawn["k"] == run.src_tokens
    assert "German token being written" in drawn["title"] and "English" in drawn["title"]
    attention_module._attention_png(Grid(), run, "decoder", 0, None, False)
    assert drawn["q"] == drawn["k"] == run.tgt_tokens and "written" not in drawn["title"]


def test_head_ablation_static_restores_gates(translator, few_states):
    model = translator.model
    model.reset_head_gates()
    box = explorers.head_ablation_explorer(translator, static=True)
    _check_static(box, n_expected=3)
    assert all(
        m.head_gate is None
        for k in ("encoder", "decoder", "cross")
        for m in model.attention_modules(k)
    )
    # the slider and the menu both select the frame
    sources = {id(link.source[0]) for link in box.links if link.target[0] is box.stack}
    assert sources == {id(box.controls["ablation"]), id(box.controls["menu"])}
    assert ablation._ablations(2, 4)[1][1] == (("cross", 0, 0),)
    # the slider's readout names the heads that are off, counted from 0, not an index
    slider = box.controls["ablation"]
    assert isinstance(slider, widgets.SelectionSlider)
    assert slider.options[:2] == ("none", "cross layer 0, head 0")


def test_head_ablation_rows_are_the_tokens_being_written(translator):
    # The chapter names a decoder row by the token it writes (row i reads <bos> +
    # translation[i] and writes translation[i], <eos> last); the ablation frames too.
    from transformer_lib.views.explorers.model_runs import _translate

    run = _translate(translator, ablation.ABLATION_SENTENCE)
    drawn = {}

    class Grid:
        def render(self, mats, q, k, *, title, **kw):
            drawn.update(q=list(q), k=list(k), title=title)
            return b""

    ablation._ablation_png(Grid(), run, run, (), "all heads on", False)
    assert drawn["q"] == run.written_tokens and drawn["q"][:-1] == run.tgt_tokens[1:]
    assert run.tgt_tokens[0] == "<bos>" != drawn["q"][0]  # the first row writes a word
    assert drawn["k"] == run.src_tokens
    assert "German token being written" in drawn["title"] and "English" in drawn["title"]


def test_head_ablation_frames_say_what_the_model_writes(translator, few_states):
    from transformer_lib.views.explorers.model_runs import _translate

    translator.model.reset_head_gates()
    box = explorers.head_ablation_explorer(translator, static=True)
    base = _translate(translator, ablation.ABLATION_SENTENCE).translation
    said = box.frame_descriptions
    assert said[0] == f"all heads on: the model writes “{base}”"
    assert said[1].startswith("cross-attention layer 0, head 0 off: the model writes “")
    alt = next(c.value for c in box.children if "explorer-alt" in getattr(c, "value", ""))
    assert "German token being written" in alt


def test_head_ablation_slider_names_each_ablation():
    names = [ablation._slider_label(off, 2, 4) for _, off in ablation._ablations(2, 4)]
    assert len(set(names)) == len(names), "two ablations share a name"
    assert max(map(len, names)) <= 21, "the readout shows about 21 characters"
    assert {"cross layer 1, all", "all cross", "encoder layer 0, all"} <= set(names)


def test_static_explorer_embeds_links_and_images(tmp_path):
    from ipywidgets.embed import dependency_state, embed_data, embed_minimal_html

    box = explorers.mask_explorer(SMALL_BATCH[:1], static=True)
    data = embed_data(views=[box], state=dependency_state([box, *box.links]))
    state = data["manager_state"]["state"]
    models = {k: v["model_name"] for k, v in state.items()}
    links = [v["state"] for v in state.values() if v["model_name"] == "LinkModel"]
    assert len(links) == len(box.links) == 1 + 2 + 4
    for link in links:
        src, tgt = link["source"], link["target"]
        assert src[0].startswith("IPY_MODEL_") and tgt[1] == "selected_index"
        assert models[tgt[0].removeprefix("IPY_MODEL_")] == "StackModel"
    images = [v for v in state.values() if v["model_name"] == "ImageModel"]
    assert len(images) == box.frame_count
    assert all(v.get("buffers") for v in images), "the PNG bytes travel as buffers"
    assert "static-explorer" in json.dumps(state)
    assert box.model_id in json.dumps(data["view_specs"])
    page = tmp_path / "explorer.html"
    embed_minimal_html(page, views=[box], state=dependency_state([box, *box.links]))
    text = page.read_text(encoding="utf-8")
    assert text.count('"LinkModel"') == len(box.links) and "static-explorer" in text


# --------------------------------------------------------------------------- live versions
def test_temperature_live_redraws():
    box = explorers.temperature_explorer(static=False)
    _check_live(box)
    before = _png(box)
    box.controls["tau"].value = 1.0
    assert _png(box) != before
    box.controls["d_k"].value = 4
    _check_live(box)
    assert box.controls["tau"].value == 2.0  # back to √d_k for the new width


def test_positional_encoding_live_clamps_the_pair():
    box = explorers.positional_encoding_explorer(static=False)
    pair = box.controls["pair"]
    pair.value = pair.max
    before = _png(box)
    box.controls["d_model"].value = 16  # pair must shrink to 0..7 and the figure redraw
    assert pair.max == 7 and pair.value == 7
    assert _png(box) != before
    _check_live(box)


def test_lr_schedule_live_redraws():
    box = explorers.lr_schedule_explorer(static=False)
    before = _png(box)
    box.controls["warmup"].value = 4000
    assert _png(box) != before
    _check_live(box)


def test_mask_live_redraws():
    box = explorers.mask_explorer(SMALL_BATCH, static=False)
    before = _png(box)
    box.controls["causal"].index = 0
    assert _png(box) != before
    _check_live(box)


@pytest.fixture(scope="module")
def live_attention(translator):
    return explorers.attention_explorer(translator, static=False)


def test_attention_live_updates_and_caches(live_attention):
    box = live_attention
    _check_live(box)
    first = _png(box)
    box.controls["sentence"].value = "Where is the train station?"
    _check_live(box)
    assert _png(box) != first and "Translation" in box.message.value
    for name, value in [("kind", "encoder"), ("layer", 1), ("head", 2), ("kind", "cross")]:
        before = _png(box)
        box.controls[name].value = value
        assert _png(box) != before, name
    box.controls["example"].index = 2
    assert box.controls["sentence"].value == explorers.EXAMPLE_SENTENCES[1]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "empty"),
        ("    ", "empty"),
        ("你好世界", "None of these characters"),
        ("I like 寿司 and 🍣.", "<unk>: 寿司 🍣"),
        ("word " * 200, "only the first 40"),
    ],
)
def test_attention_live_bad_input_gives_a_message(live_attention, text, expected):
    box = live_attention
    box.controls["sentence"].value = text
    shown = box.message.value.replace("&lt;", "<").replace("&gt;", ">")
    assert expected in shown
    assert "Traceback" not in shown and "Could not" not in shown
    box.controls["sentence"].value = "It costs $5, not $50."  # $ must not start mathtext
    _check_live(box)


def test_head_ablation_live(translator):
    model = translator.model
    model.reset_head_gates()
    model.set_head_gate("encoder", 0, [1.0, 1.0, 0.5, 1.0])  # a gate the reader set earlier
    try:
        box = explorers.head_ablation_explorer(translator, static=False)
        _check_live(box)
        before = _png(box)
        box.toggles[("cross", 0, 1)].value = False
        assert _png(box) != before and "1 head off" in box.message.value
        assert model.attention_modules("cross")[0].head_gate is None  # restored after drawing
        assert model.attention_modules("encoder")[0].head_gate.tolist() == [1.0, 1.0, 0.5, 1.0]
        box.reset()
        assert all(b.value for b in box.toggles.values())
        assert "all heads on" in box.message.value.lower()
    finally:
        model.reset_head_gates()


def test_head_ablation_restores_gates_when_translation_fails(translator, monkeypatch):
    model = translator.model
    model.reset_head_gates()
    box = explorers.head_ablation_explorer(translator, static=False)

    def broken(*args, **kwargs):
        assert model.attention_modules("cross")[1].head_gate is not None  # gate was applied
        raise RuntimeError("boom")

    monkeypatch.setattr(translator, "translate", broken)
    box.toggles[("cross", 1, 0)].value = False
    assert "Could not update" in box.message.value and "boom" in box.message.value
    assert all(
        m.head_gate is None
        for k in ("encoder", "decoder", "cross")
        for m in model.attention_modules(k)
    )


# --------------------------------------------------------------------------- over training
def _snapshot_file(tmp_path, steps=(0, 100, 1000), n_layers=2, n_heads=2, long_at=0):
    """A small attention_snapshots.json in the trainer's format: two sentences, a few steps.

    At step ``long_at`` the first sentence's output runs to 30 tokens (an untrained model
    repeating itself); the maps sharpen from uniform to one-hot as the steps go on.
    """
    sources = [("The cat sleeps.", ["▁The", "▁cat", "▁sleeps", "."]), ("Hello!", ["▁Hello", "!"])]
    records = []
    for k, step in enumerate(steps):
        sentences = []
        for i, (text, src) in enumerate(sources):
            words = ["▁Die", "▁Katze", "▁schläft", "."] if i == 0 else ["▁Hallo", "!"]
            if step == long_at and i == 0:
                words = ["▁lot"] * 30
            tgt = ["<bos>", *words]  # the decoder's input: <bos> and the output before <eos>
            T, S = len(tgt), len(src)
            sharp = k / max(1, len(steps) - 1)  # 0 = uniform, 1 = one source token per row
            rows = [
                [round((1 - sharp) / S + sharp * (j == min(t, S - 1)), 3) for j in range(S)]
                for t in range(T)
            ]  # (T, S)
            cross = [[rows for _ in range(n_heads)] for _ in range(n_layers)]
            sentences.append(
                {
                    "source": text,
                    "translation": " ".join(w.lstrip("▁") for w in words),
                    "source_tokens": src,
                    "target_tokens": tgt,
                    "cross": cross,
                }
            )
        records.append({"step": step, "sentences": sentences})
    path = tmp_path / "attention_snapshots.json"
    path.write_text(json.dumps(records[::-1], ensure_ascii=False), encoding="utf-8")  # unsorted
    return path


def test_training_snapshots_static(tmp_path):
    path = _snapshot_file(tmp_path)
    box = training_snapshots.training_snapshots_explorer(path, static=True)
    frames = _check_static(box, n_expected=2 * 3)  # sentences x steps, all different
    step, sentence = box.controls["step"], box.controls["sentence"]
    assert list(step.options) == ["0", "100", "1,000"] and step.index == 2  # the trained model
    assert list(sentence.options) == ["The cat sleeps.", "Hello!"]
    # the sentence menu selects the outer stack, the step slider each inner one
    outer = [link for link in box.links if link.target[0] is box.stack]
    assert len(outer) == 1 and outer[0].source[0] is sentence
    assert all(isinstance(c, widgets.Stack) for c in box.stack.children)
    assert len(frames) == len(set(frames))
    # every frame has the same size, so the page does not jump while the slider moves
    import io

    from PIL import Image

    assert len({Image.open(io.BytesIO(f)).size for f in frames}) == 1


def test_training_snapshots_thins_steps_to_keep_the_page_light(tmp_path, monkeypatch):
    path = _snapshot_file(tmp_path, steps=(0, 10, 20, 50, 100, 200, 500, 1000))
    monkeypatch.setattr(training_snapshots, "MAX_FRAMES", 8)
    box = training_snapshots.training_snapshots_explorer(path, static=True)
    steps = list(box.controls["step"].options)
    assert box.frame_count == 2 * len(steps) <= 8
    assert steps[0] == "0" and steps[-1] == "1,000"


def test_training_snapshots_live_redraws(tmp_path):
    box = training_snapshots.training_snapshots_explorer(_snapshot_file(tmp_path), static=False)
    _check_live(box)
    first = _png(box)
    box.controls["step"].index = 0
    assert _png(box) != first
    box.controls["sentence"].index = 1
    _check_live(box)


def test_training_snapshots_figure_rows_are_target_tokens(tmp_path):
    import matplotlib.pyplot as plt

    records = training_snapshots.load_training_snapshots(_snapshot_file(tmp_path))
    assert [r["step"] for r in records] == [0, 100, 1000]  # sorted
    fig = training_snapshots.plot_attention_over_training(records, 0, [0, 1000], max_rows=5)
    try:
        panels = [ax for ax in fig.axes if ax.get_images()]
        assert len(panels) == 2
        untrained, trained = panels
        rows = [t.get_text() for t in trained.get_yticklabels()]
        assert rows == [
            "<bos> → ▁Die",
            "▁Die → ▁Katze",
            "▁Katze → ▁schläft",
            "▁schläft → .",
            ". → <eos>",
        ]
        assert [t.get_text() for t in trained.get_xticklabels()] == ["▁The", "▁cat", "▁sleeps", "."]
        # upright under their columns: at 45° the source tokens crowd into each other
        assert all(t.get_rotation() == 90 for t in trained.get_xticklabels())
        assert trained.get_images()[0].get_array().shape == (5, 4)  # (T rows, S columns)
        assert untrained.get_images()[0].get_array().shape == (5, 4)  # 31 rows cut to max_rows
        assert "first 5 of 31" in untrained.get_title() and trained.get_title() == "step 1,000"
        assert "query" in fig.get_supylabel()
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="not recorded"):
        training_snapshots.plot_attention_over_training(records, 0, [5])


def test_training_snapshots_missing_or_bad_file(tmp_path, monkeypatch):
    import transformer_lib.pipeline.corpus as corpus

    monkeypatch.setattr(corpus, "shipped_data_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match="--snapshot-at"):
        training_snapshots.load_training_snapshots()
    with pytest.raises(FileNotFoundError, match="attention_snapshots.json"):
        training_snapshots.training_snapshots_explorer(static=True)
    bad = tmp_path / "bad.json"
    records = json.loads(_snapshot_file(tmp_path).read_text(encoding="utf-8"))
    records[0]["sentences"][1]["cross"][0][0].pop()  # one row short of its target tokens
    bad.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(ValueError, match="must have shape"):
        training_snapshots.load_training_snapshots(bad)
    bad.write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a JSON file"):
        training_snapshots.load_training_snapshots(bad)


# --------------------------------------------------------------------------- chapters 1, 2, 4
from transformer_lib.views.explorers import (  # noqa: E402
    bpe_merges,
    embedding_scale,
    heads,
    layer_cost,
)


def _check_alt_text(box) -> None:
    """The frames are described in text for screen readers (hidden on the page)."""
    hidden = [
        c.value
        for c in box.children
        if isinstance(c, widgets.HTML) and "visually-hidden" in c.value
    ]
    assert len(hidden) == 1 and len(hidden[0]) > 80
    assert box.children.index(box.stack) == len(box.children) - 2  # right after the frames


def test_layer_costs_follow_table_1():
    costs = layer_cost.layer_costs(n=4, d=8, kernel_size=3)
    assert costs["self-attention"] == (4**2 * 8, 1, 1)
    assert costs["recurrent"] == (4 * 8**2, 4, 4)
    assert costs["convolution"] == (3 * 4 * 8**2, 1, 2)  # ceil(log_3 4) = 2
    assert layer_cost.layer_costs(9, 8)["convolution"][2] == 2  # log_3 9 exactly
    assert layer_cost.layer_costs(1, 8)["convolution"][2] == 1
    for n, d in [(64, 512), (512, 512), (2048, 128)]:  # attention is cheaper iff n < d
        c = layer_cost.layer_costs(n, d)
        assert (c["self-attention"][0] < c["recurrent"][0]) == (n < d)
    with pytest.raises(ValueError):
        layer_cost.layer_costs(0, 8)


def test_layer_cost_static(monkeypatch):
    monkeypatch.setattr(layer_cost, "_STATIC_LENGTHS", (8, 2048))
    monkeypatch.setattr(layer_cost, "_STATIC_WIDTHS", (128, 512))
    box = explorers.layer_cost_explorer(static=True)
    _check_static(box, n_expected=2 * 2)
    _check_alt_text(box)
    assert isinstance(box.controls["n"], widgets.SelectionSlider)


def test_layer_cost_live_redraws():
    box = explorers.layer_cost_explorer(static=False)
    _check_live(box)
    before = _png(box)
    box.controls["n"].value = 4096
    assert _png(box) != before
    before = _png(box)
    box.controls["d"].value = 64
    assert _png(box) != before
    _check_live(box)


@pytest.fixture(scope="module")
def replay():
    return bpe_merges.BpeReplay()


def test_bpe_replay_gives_the_tokenizers_tokens(replay):
    from transformer_lib.pipeline.corpus import find_corpus, read_pairs

    pairs, _ = read_pairs(find_corpus())
    sample = [s for pair in pairs[::97] for s in pair] + ["Tom 🙂 東京", "naïve café", "mu\u0308de"]
    for s in sample:
        assert replay.tokens(s) == replay.tokenizer.tokens(s), s


def test_bpe_replay_merges_add_up(replay):
    s = "Wo ist die Straßenbahnhaltestelle?"
    chars = replay.tokens(s, 0)
    assert "".join(chars) == "".join(replay.tokenizer.tokens(s))  # nothing lost
    assert all(len(t) == 1 for t in chars)
    counts = [len(replay.tokens(s, m)) for m in (0, 10, 100, 1000, replay.n_merges)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    first = replay.merges[0]
    assert replay.tokens("".join(first), 1)[-1] == "".join(first)
    with pytest.raises(ValueError, match="between 0 and"):
        replay.tokens(s, replay.n_merges + 1)


def test_bpe_static(monkeypatch):
    monkeypatch.setattr(bpe_merges, "_STATIC_MERGES", (0, 100, None))
    box = explorers.bpe_merges_explorer(static=True)
    _check_static(box, n_expected=3)
    _check_alt_text(box)
    assert box.controls["merges"].index == 2  # all merges: the book's tokenizer
    header = box.children[0].value  # says that the slider skips most merges
    assert "one merge at a time" not in header
    n_merges = bpe_merges.BpeReplay().n_merges
    assert f"stops at 3 of the {n_merges + 1:,} stages" in header
    assert "sentence" not in box.controls  # no box that cannot be typed into

    def texts(w):
        found = [w] if isinstance(w, widgets.Text) else []
        return found + [t for c in getattr(w, "children", ()) for t in texts(c)]

    assert not texts(box)
    notes = [c.value for c in box.children if isinstance(c, widgets.HTML)]
    assert any(bpe_merges.OWN_SENTENCE_NOTE in n for n in notes)


def test_bpe_live_redraws_and_explains_empty_input():
    box = explorers.bpe_merges_explorer(static=False)
    _check_live(box)
    before = _png(box)
    box.controls["merges"].value = 50
    assert _png(box) != before
    box.controls["sentence"].value = "Ein Igel schläft."
    _check_live(box)
    box.controls["sentence"].value = "   "
    assert "empty" in box.message.value


def test_embedding_scale_parts_and_the_point_of_the_scale(translator):
    model = translator.model
    tok = translator.tokenizer
    ids = tok.encode(embedding_scale.SCALE_SENTENCE)
    d = model.config.d_model
    token, position = embedding_scale.encoder_inputs(model, ids, scale=True)
    token1, position1 = embedding_scale.encoder_inputs(model, ids, scale=False)
    np.testing.assert_allclose(token, token1 * d**0.5, rtol=1e-6)
    np.testing.assert_allclose(position, position1)
    np.testing.assert_allclose(np.linalg.norm(position, axis=1), (d / 2) ** 0.5, rtol=1e-5)
    # With the scale, a repeated token looks like itself; without it, neighbours look alike.
    n = len(ids)
    same = np.array([[ids[i] == ids[j] and i != j for j in range(n)] for i in range(n)])
    near = np.array([[abs(i - j) == 1 and ids[i] != ids[j] for j in range(n)] for i in range(n)])
    for model_ in embedding_scale._models(translator).values():
        scaled = embedding_scale._cosine(sum(embedding_scale.encoder_inputs(model_, ids, True)))
        plain = embedding_scale._cosine(sum(embedding_scale.encoder_inputs(model_, ids, False)))
        assert scaled[same].mean() > scaled[near].mean()
        assert plain[near].mean() > plain[same].mean()


def test_embedding_scale_static(translator):
    box = explorers.embedding_scale_explorer(translator=translator, static=True)
    assert "static-explorer" in box._dom_classes and box.frame_count == 4
    frames = _frames(box.stack)
    assert len(set(frames)) == 4 and all(f.startswith(PNG_MAGIC) for f in frames)
    assert max(len(f) for f in frames) < 80_000
    links = {(id(link.source[0]), id(link.target[0])) for link in box.links}
    assert (id(box.controls["scale"]), id(box.stack)) in links
    assert all((id(box.controls["embeddings"]), id(s)) in links for s in box.stack.children)
    assert box.controls["sentence"].disabled
    _check_alt_text(box)


def test_embedding_scale_live(translator):
    box = explorers.embedding_scale_explorer(translator=translator, static=False)
    _check_live(box)
    before = _png(box)
    box.controls["scale"].value = False
    assert _png(box) != before
    box.controls["sentence"].value = "Tom"  # one token
    assert "at least two tokens" in box.message.value


def test_head_explorer_static(translator):
    config = translator.model.config
    box = explorers.head_explorer(translator, heads.HEAD_SENTENCES[:1], static=True)
    _check_static(box, n_expected=config.n_encoder_layers * config.n_heads)
    _check_alt_text(box)
    assert box.controls["head"].max == config.n_heads - 1
    assert box.controls["sentence"].disabled


def test_head_explorer_live(translator):
    box = explorers.head_explorer(translator, static=False)
    _check_live(box)
    before = _png(box)
    box.controls["head"].value = 1
    assert _png(box) != before
    box.controls["sentence"].value = "Where is the station?"
    _check_live(box)
    assert "Translation" in box.message.value


def test_head_frame_text_is_at_least_12_css_px(translator):
    """Two heatmaps share one frame; its token labels and titles stay well above 9 px."""
    from transformer_lib.views.explorers.frames import figure_to_png
    from transformer_lib.views.explorers.model_runs import _translate
    from transformer_lib.views.text_size import png_text_size

    fig = heads._head_figure(_translate(translator, heads.HEAD_SENTENCES[1]), 1, 0)
    png = figure_to_png(fig)
    assert int.from_bytes(png[16:20], "big") <= 688  # shown at full size
    assert png_text_size(png) >= 12


def test_chapter_1_to_4_frame_counts_stay_modest(translator):
    config = translator.model.config
    counts = {
        "layer cost": len(layer_cost._STATIC_LENGTHS) * len(layer_cost._STATIC_WIDTHS),
        "bpe": len(bpe_merges._STATIC_MERGES),
        "embedding scale": 4,
        "heads": len(heads.HEAD_SENTENCES) * config.n_encoder_layers * config.n_heads,
    }
    assert all(2 <= n <= 40 for n in counts.values()), counts


@pytest.mark.parametrize("name", ["layer_cost", "bpe", "embedding_scale", "heads"])
def test_chapter_1_to_4_frames_have_readable_text(name, translator):
    """Drawn at FRAME_DPI and shown at most 688 CSS px wide, no text is under 9 px."""

    from transformer_lib.views.explorers.frames import FRAME_DPI
    from transformer_lib.views.explorers.model_runs import _translate

    if name == "layer_cost":
        fig = layer_cost._cost_figure(128, 512, 3, (8, 8192), (128, 1024))
    elif name == "bpe":
        fig = bpe_merges._bpe_figure(bpe_merges.BpeReplay(), bpe_merges.BPE_SENTENCES, 100)
    elif name == "embedding_scale":
        tok = translator.tokenizer
        ids = tok.encode(embedding_scale.SCALE_SENTENCE)
        fig = embedding_scale._scale_figure(
            translator.model, [tok.id_to_token(i) for i in ids], ids, True, "trained"
        )
    else:
        fig = heads._head_figure(_translate(translator, heads.HEAD_SENTENCES[0]), 0, 0)
    smallest = smallest_text_css_px(fig, FRAME_DPI, FRAME_COLUMN_PX, tight=False)
    assert smallest >= 9, f"{name}: smallest text {smallest:.1f} CSS px"


# --------------------------------------------------------------------------- chapter 13
from transformer_lib.views.explorers import kv_cache  # noqa: E402


def test_kv_cache_bytes_follow_the_formula():
    # 2 (key and value) x layers x G x d_k x tokens x bytes
    assert kv_cache.kv_cache_bytes(32, 32, 128, 32_768) == 16 * 2**30
    assert kv_cache.kv_cache_bytes(32, 8, 128, 32_768) == 4 * 2**30  # 4 heads per group
    assert kv_cache.kv_cache_bytes(6, 8, 64, 1, bytes_per_number=4) == 2 * 6 * 8 * 64 * 4
    assert kv_cache.kv_cache_bytes(1, 1, 1, 0) == 0
    with pytest.raises(ValueError):
        kv_cache.kv_cache_bytes(32, 0, 128, 10)


def test_kv_cache_static():
    box = explorers.kv_cache_explorer(static=True)
    groups = [g for g in range(1, 33) if 32 % g == 0]
    frames = _check_static(box, n_expected=len(groups) * len(kv_cache._STATIC_CONTEXTS))
    _check_alt_text(box)
    assert list(box.controls["G"].options) == [str(g) for g in groups]
    assert box.controls["G"].value == "8" and box.controls["context"].value == "32,768"
    assert all(int.from_bytes(f[16:20], "big") <= 688 for f in frames)  # shown at full size


def test_kv_cache_frames_have_readable_text():
    from transformer_lib.views.explorers.frames import figure_to_png
    from transformer_lib.views.text_size import png_text_size

    for g, n in [(1, 1_024), (8, 32_768), (32, 131_072)]:
        png = figure_to_png(kv_cache._cache_figure(g, n, kv_cache._STATIC_CONTEXTS))
        scale = min(1.0, 688 / int.from_bytes(png[16:20], "big"))
        assert png_text_size(png) * scale >= 9


def test_kv_cache_figure_states_the_arithmetic():
    fig = kv_cache._cache_figure(8, 32_768, kv_cache._STATIC_CONTEXTS)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "= 4.0 GiB" in texts and "multi-head (G = 32): 16.0 GiB" in texts
    assert "grouping saves 75% (÷ 4)" in texts
    line = next(ln for ln in fig.axes[0].lines if ln.get_linewidth() > 2)  # the chosen G
    assert line.get_ydata()[0] == pytest.approx(
        kv_cache.kv_cache_bytes(32, 8, 128, 1_024) / 2**30, rel=1e-3
    )


def test_kv_cache_figure_labels_every_line_and_ends_at_the_largest_context():
    for contexts in (kv_cache._STATIC_CONTEXTS, kv_cache._LIVE_CONTEXTS):
        fig = kv_cache._cache_figure(4, 4_096, contexts)
        ax = fig.axes[0]
        labels = {t.get_text() for t in ax.texts}
        assert labels >= {f"G = {g}" for g in (1, 2, 4, 8, 16, 32)}
        assert ax.get_xlim()[1] == pytest.approx(max(contexts))
        assert max(ax.get_xticks()) == pytest.approx(max(contexts))  # the end is labelled


def test_kv_cache_live_redraws():
    box = explorers.kv_cache_explorer(static=False)
    _check_live(box)
    before = _png(box)
    box.controls["G"].value = "1"
    _check_live(box)
    after_g = _png(box)
    assert after_g != before
    box.controls["context"].value = 1_024
    _check_live(box)
    assert _png(box) != after_g


# --------------------------------------------------------------------------- phone frames
def _phone_frames(monkeypatch, static_env: bool, make_figure) -> tuple[bytes, bytes]:
    """(the frame as the build makes it, the same frame drawn without a phone version)."""
    from transformer_lib.views.explorers.frames import figure_to_png

    if static_env:
        monkeypatch.setenv(explorers.STATIC_ENV_VAR, "1")
    else:
        monkeypatch.delenv(explorers.STATIC_ENV_VAR, raising=False)
    return figure_to_png(make_figure()), figure_to_png(make_figure(), phone=False)


def test_a_static_two_panel_frame_carries_its_phone_version(monkeypatch):
    from transformer_lib.views.explorers.frames import MIN_TEXT_PX, readable_width
    from transformer_lib.views.phone_layout import PHONE_COLUMN_PX, phone_png, strip_phone_png
    from transformer_lib.views.text_size import png_text_size

    png, desktop = _phone_frames(
        monkeypatch, True, lambda: temperature._temperature_figure(6, 64, 8.0, 1)
    )
    assert readable_width(desktop) > PHONE_COLUMN_PX  # it scrolled on a phone
    phone = phone_png(png)
    assert phone is not None and phone.startswith(PNG_MAGIC)
    assert strip_phone_png(png) == desktop  # the desktop frame is unchanged
    width, height = (int.from_bytes(phone[i : i + 4], "big") for i in (16, 20))
    assert width <= PHONE_COLUMN_PX and height > width  # two panels, one above the other
    assert png_text_size(phone) >= MIN_TEXT_PX  # shown at its own size on a phone
    assert readable_width(phone) <= PHONE_COLUMN_PX


def test_chapter_5_frame_stacks_with_its_colour_bar_under_the_table(monkeypatch):
    from transformer_lib.views.phone_layout import PHONE_COLUMN_PX, phone_png

    png, _ = _phone_frames(monkeypatch, True, lambda: positions._pe_figure(128, 100, 10))
    phone = phone_png(png)
    assert phone is not None
    width, height = (int.from_bytes(phone[i : i + 4], "big") for i in (16, 20))
    assert width <= PHONE_COLUMN_PX and height > 2 * width  # two panels and the bar


def test_a_frame_that_does_not_qualify_carries_no_phone_version(monkeypatch):
    from transformer_lib.views.explorers.frames import new_figure
    from transformer_lib.views.phone_layout import phone_png

    def one_panel():
        fig = new_figure((8.6, 4.0))
        fig.subplots().plot([0, 1], [1, 0], label="a line")
        return fig

    png, desktop = _phone_frames(monkeypatch, True, one_panel)
    assert phone_png(png) is None and png == desktop


def test_outside_the_static_build_no_frame_carries_a_phone_version(monkeypatch, few_states):
    from transformer_lib.views.phone_layout import phone_png

    png, desktop = _phone_frames(
        monkeypatch, False, lambda: temperature._temperature_figure(6, 64, 8.0, 1)
    )
    assert phone_png(png) is None and png == desktop
    # static=True in a notebook (no book build): the frames are the desktop ones only.
    box = explorers.temperature_explorer(static=True)
    assert all(phone_png(f) is None for f in _frames(box.stack))
    monkeypatch.setenv(explorers.STATIC_ENV_VAR, "1")
    box = explorers.temperature_explorer()
    assert all(phone_png(f) is not None for f in _frames(box.stack))
