"""Chapters 5 to 8: figures and explorer frames readable at the page width, the parameter
breakdown and its explorer (ch. 8), the stored post-LN / pre-LN runs in
data/norm_warmup_runs.json and their explorer (ch. 7), and the positional-encoding
explorer's last pair (ch. 5)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_text import FRAME_COLUMN_PX, smallest_text_css_px  # noqa: E402

from transformer_lib import Transformer, TransformerConfig, count_parameters  # noqa: E402
from transformer_lib.views.explorers import norm_warmup, parameters, positions  # noqa: E402
from transformer_lib.views.layer_norm import plot_layer_norm_effect  # noqa: E402
from transformer_lib.views.masks import plot_mask  # noqa: E402
from transformer_lib.views.positions import (  # noqa: E402
    plot_position_rotation,
    plot_position_similarity,
    plot_positional_encoding,
    plot_sinusoids,
)

widgets = pytest.importorskip("ipywidgets")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
torch.set_num_threads(1)


def _leaves(stack) -> list[bytes]:
    out = []
    for child in stack.children:
        out += _leaves(child) if isinstance(child, widgets.Stack) else [bytes(child.value)]
    return out


def _check_static(box, n_frames: int) -> list[bytes]:
    assert "static-explorer" in box._dom_classes
    frames = _leaves(box.stack)
    assert len(frames) == box.frame_count == n_frames
    assert all(f.startswith(PNG_MAGIC) for f in frames)
    assert len(set(frames)) == len(frames), "two states render the same frame"
    assert max(len(f) for f in frames) < 80_000
    controls = list(box.controls.values())
    for link in box.links:
        (source, _), (target, attr) = link.source, link.target
        assert attr == "selected_index" and any(source is c for c in controls)
        assert len(source.options) == len(target.children)
    return frames


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    "config",
    [
        TransformerConfig.base(37000),
        TransformerConfig.big(37000),
        TransformerConfig.tiny(4000, share_embeddings=False),
        TransformerConfig.tiny(4000, positional="learned", norm_first=True),
        TransformerConfig.tiny(500, n_encoder_layers=3, n_decoder_layers=1),
    ],
    ids=["base", "big", "unshared", "learned-pre-LN", "3-1 layers"],
)
def test_breakdown_adds_up_to_count_parameters(config):
    parts = parameters.parameter_breakdown(config)
    with torch.device("meta"):
        assert sum(parts.values()) == count_parameters(Transformer(config))
    assert all(n > 0 for n in parts.values())
    assert ("learned positions" in parts) == (config.positional == "learned")


def test_breakdown_of_the_base_model():
    parts = parameters.parameter_breakdown(TransformerConfig.base(37000))
    total = sum(parts.values())
    ffn = parts["encoder feed-forward"] + parts["decoder feed-forward"]
    assert 0.39 < ffn / total < 0.41  # two fifths, as chapter 8 says
    assert parts["embeddings and output matrix"] == 37000 * 512
    heads = {
        h: sum(parameters.parameter_breakdown(TransformerConfig.base(37000, n_heads=h)).values())
        for h in (1, 8, 32)
    }
    assert len(set(heads.values())) == 1  # Table 3 row (A): heads do not add parameters


@pytest.fixture(scope="module")
def parameter_explorer_built():
    """The static parameter explorer (every frame drawn: about 10 s), built once for the
    tests below, with the x axis of every frame and its largest bar recorded."""
    scales, largest = [], []
    draw = parameters._breakdown_figure

    def recording(config, label="", xmax=None, narrow=False, **kwargs):
        fig = draw(config, label, xmax, narrow=narrow, **kwargs)
        if not narrow:  # the desktop frames (a phone version is drawn with narrow=True)
            scales.append(fig.axes[0].get_xlim())
            largest.append(max(parameters.parameter_breakdown(config).values()) / 1e6)
        return fig

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(parameters, "_breakdown_figure", recording)
        box = parameters.parameter_explorer(static=True)
    return box, scales, largest


def test_parameter_explorer_static(parameter_explorer_built):
    box, _, _ = parameter_explorer_built
    frames = _check_static(box, n_frames=2 * len(parameters._VARIANTS))
    assert box.controls["model"].options[0] == "base"
    assert set(parameters.TABLE3_PARAMS) <= {name for name, _ in parameters._VARIANTS}
    assert len(frames) <= 40


def test_parameter_explorer_frames_share_one_scale(parameter_explorer_built):
    # Bars can be compared between frames only if every frame has the same x axis.
    _, scales, largest = parameter_explorer_built
    draw = parameters._breakdown_figure
    assert len(scales) == 2 * len(parameters._VARIANTS)
    assert len(set(scales)) == 1 and scales[0][0] == 0
    assert scales[0][1] > max(largest)  # the largest bar fits, with room for its label
    # without a fixed scale, a figure fits its own configuration
    small = draw(TransformerConfig.tiny(4000))
    assert small.axes[0].get_xlim()[1] < scales[0][1]


@pytest.mark.parametrize(
    "config",
    [TransformerConfig.base(37000), TransformerConfig.tiny(4000, share_embeddings=False)],
    ids=["base", "tiny-unshared"],
)
def test_parameter_bars_use_one_unit(config):
    # every bar label in millions with two decimals and a percent share, never a raw count
    import re

    fig = parameters._breakdown_figure(config, "base")
    labels = [t.get_text() for t in fig.axes[0].texts]
    parts = parameters.parameter_breakdown(config)
    assert len(labels) == len(parts)
    pattern = re.compile(r"(\d+\.\d\d|<0\.01) M \((\d+%|\d\.\d%|<0\.1%)\)")
    assert all(pattern.fullmatch(label) for label in labels), labels
    assert "in millions, M" in fig.axes[0].get_xlabel()
    assert parameters.count_label(12_288, 63_119_496) == "0.01 M (<0.1%)"
    assert parameters.count_label(1_024, 2_000_000) == "<0.01 M (0.1%)"
    assert parameters.count_label(6_299_648, 63_119_496) == "6.30 M (10%)"


def test_parameter_explorer_live_redraws_every_knob():
    box = parameters.parameter_explorer(static=False)
    seen = {bytes(box.image.value)}
    changes = [("layers", 2), ("d_model", 768), ("heads", 32), ("d_ff", 4096), ("vocab", 8000)]
    for name, value in changes:
        box.controls[name].value = value
        assert "Could not" not in box.message.value
        seen.add(bytes(box.image.value))
    box.controls["sharing"].index = 1
    seen.add(bytes(box.image.value))
    assert len(seen) == len(changes) + 2 and all(p.startswith(PNG_MAGIC) for p in seen)


# --------------------------------------------------------------------------- stored runs
@pytest.fixture(scope="module")
def stored():
    return norm_warmup.load_runs()


def test_stored_runs_cover_the_grid(stored):
    settings = stored["settings"]
    grid = norm_warmup.GRID
    assert settings["grid"] == {k: list(v) for k, v in grid.items()}
    n_points = settings["steps"] // settings["window"]
    keys = {
        norm_warmup.run_key(nf, w, lr, s)
        for nf in grid["norm_first"]
        for w in grid["warmup"]
        for lr in grid["lr"]
        for s in grid["seed"]
    }
    assert set(stored["runs"]) == keys
    for run in stored["runs"].values():
        assert len(run["loss"]) == len(run["accuracy"]) == n_points
        assert all(0.0 <= a <= 1.0 for a in run["accuracy"])
        assert all(math.isfinite(v) and v >= 0 for v in run["loss"])
        assert 0.0 <= run["final_accuracy"] <= 1.0


def test_stored_runs_come_from_train_reverser(stored):
    """The first 10 steps of a re-run reproduce the stored curve: same code, same seeds."""
    for norm_first, warmup in [(True, 0), (False, 50)]:
        curves = norm_warmup.train_reverser(norm_first, warmup, steps=10, lr=3e-3, seed=1)
        saved = stored["runs"][norm_warmup.run_key(norm_first, warmup, 3e-3, 1)]
        again = norm_warmup.block_means(curves["loss"])
        assert again == pytest.approx(saved["loss"][:2], abs=2e-3)


def test_what_chapter_7_says_about_the_seeds(stored):
    """The chapter's prose: warm-up rescues post-LN in only some seeds; pre-LN always learns."""
    runs, seeds = stored["runs"], norm_warmup.GRID["seed"]

    def solved(norm_first, warmup, lr):
        key = norm_warmup.run_key
        return sum(norm_warmup.is_solved(runs[key(norm_first, warmup, lr, s)]) for s in seeds)

    assert solved(False, 0, 3e-3) == 0
    assert 0 < solved(False, 50, 3e-3) < len(seeds)
    assert solved(True, 0, 3e-3) == solved(True, 0, 1e-3) == len(seeds)
    assert all(solved(False, w, lr) == 0 for w in (0, 50) for lr in (5e-4, 1e-3))


def test_norm_warmup_explorer(stored):
    box = norm_warmup.norm_warmup_explorer(stored)
    grid = norm_warmup.GRID
    _check_static(box, n_frames=len(grid["lr"]) * len(grid["warmup"]))
    rows = norm_warmup.grid_summary(stored)
    assert len(rows) == 4 and all(len(r) == 1 + len(grid["lr"]) for r in rows)


def test_norm_warmup_controls_keep_label_and_buttons_together(stored):
    """The warm-up label and its buttons form one row that never shrinks or splits; when the
    page is too narrow for the slider and the buttons, the row wraps between the two."""
    box = norm_warmup.norm_warmup_explorer(stored)
    lr, warm = box.controls["lr"], box.controls["warmup"]
    row = next(c for c in box.children if lr in getattr(c, "children", ()))
    assert warm in row.children and row.layout.flex_flow == "row wrap"
    assert (warm.layout.display, warm.layout.flex_flow) == ("flex", "row nowrap")
    assert warm.layout.flex == "0 0 auto"
    # both controls still switch the frames (links that the browser follows)
    assert {id(link.source[0]) for link in box.links} >= {id(lr), id(warm)}


def test_missing_runs_file_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="scripts/norm_warmup_runs.py"):
        norm_warmup.load_runs(tmp_path / "none.json")


# --------------------------------------------------------------------------- chapter 5
def test_positional_explorer_ends_at_the_last_pair():
    label, fraction = positions._PE_FRACTIONS[-1]
    for d_model in positions._PE_SIZES:
        pair = min(round(fraction * d_model / 2), d_model // 2 - 1)
        assert pair == d_model // 2 - 1, label


def test_slider_pairs_are_the_frames_settings():
    """Chapter 5 quotes the explorer's settings from slider_pairs: 3/4 comes before last."""
    assert positions.slider_pairs(128)[-2:] == [("3/4", 48), ("last", 63)]
    for d_model in positions._PE_SIZES:
        pairs = positions.slider_pairs(d_model)
        assert [label for label, _ in pairs] == [label for label, _ in positions._PE_FRACTIONS]
        assert pairs[-1][1] == d_model // 2 - 1


def test_wavelengths_are_written_as_in_the_chapter():
    """54,410 in the legend and the frame's title, as in the prose; never 5.44e+04."""
    fig = plot_sinusoids(_pe(50, 128), dims=[0, 126], stacked=False)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0].endswith("λ = 6.28") and labels[1].endswith("λ = 54,410")
    frame = positions._pe_figure(128, 100, 63)
    title = frame._suptitle.get_text()
    legend = [t.get_text() for ax in frame.axes if ax.get_legend() for t in ax.get_legend().texts]
    assert "54,410 positions" in title and legend[0].endswith("λ = 54,410")
    assert not any("e+" in t for t in [*labels, *legend, title])


def test_encoding_columns_are_dimensions_not_pairs():
    """The paper's i counts sin/cos pairs, so the column axis is labelled dim, not i."""
    ax = plot_positional_encoding(_pe(20, 16)).axes[0]
    assert "dim" in ax.get_xlabel() and "PE(pos, dim)" in ax.figure.axes[1].get_ylabel()
    assert "PE(pos, i)" not in ax.figure.axes[1].get_ylabel()


def test_positional_frames_are_shown_at_full_size_with_large_text():
    from transformer_lib.views.explorers.frames import figure_to_png
    from transformer_lib.views.text_size import png_text_size

    png = figure_to_png(positions._pe_figure(128, 100, 63))
    assert int.from_bytes(png[16:20], "big") <= 688  # not shrunk by the page
    assert png_text_size(png) >= 12


def test_wide_encoding_tables_are_averaged_not_aliased():
    """512 columns in a panel about 300 px wide: "nearest" would show some columns and skip
    the others, drawing stripes (moiré) that are not in the table; 128 columns keep
    "nearest", two pixels or more per column."""
    wide = positions._pe_figure(512, 100, 32).axes[0].images[0]
    narrow = positions._pe_figure(128, 100, 32).axes[0].images[0]
    assert wide.get_interpolation() != "nearest"
    assert narrow.get_interpolation() == "nearest"
    default = plot_positional_encoding(_pe(20, 16)).axes[0].images[0]
    assert default.get_interpolation() == "nearest"  # chapter 5's Fig. 5.1 is unchanged


def test_positional_frame_colour_bar_label_is_apart_from_the_curves_label():
    """The colour bar lies under the table, not beside the right panel's y axis, and its
    label says it is a colour scale."""
    frame = positions._pe_figure(128, 100, 63)
    frame.canvas.draw()
    table, curves = frame.axes[0], frame.axes[-1]
    colorbar = table.images[0].colorbar
    assert colorbar.orientation == "horizontal"
    renderer = frame.canvas.get_renderer()
    bar, box = colorbar.ax.get_window_extent(renderer), table.get_window_extent(renderer)
    assert bar.y1 < box.y0 and bar.x1 <= box.x1 + 1  # under the table
    assert colorbar.ax.get_xlabel() != curves.get_ylabel()
    assert "colour" in colorbar.ax.get_xlabel()


# --------------------------------------------------------------------------- chapter 6
def test_mask_grid_that_is_not_a_mask_gets_its_own_axes_and_legend():
    """Fig. 6.5 plots output position against changed input token, not query against key."""
    tokens = ["<bos>", "▁Danke", "."]
    fig = plot_mask(
        np.tril(np.ones((3, 3), bool)),
        tokens,
        tokens,
        legend=("output changed", "unchanged"),
        xlabel="decoder input token changed",
        ylabel="output position",
    )
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("decoder input token changed", "output position")
    assert [t.get_text() for t in fig.legends[0].texts] == ["output changed", "unchanged"]
    default = plot_mask(np.tril(np.ones((3, 3), bool)), tokens, tokens).axes[0]
    assert (default.get_xlabel(), default.get_ylabel()) == (
        "key (attends to)",
        "query (attends from)",
    )


# --------------------------------------------------------------------------- readability
@pytest.mark.parametrize("which", ["positions", "masks", "parameters", "norm_warmup"])
def test_explorer_frames_stay_readable_at_page_width(which, stored):
    """Frames are 80-dpi PNGs shown at most 688 CSS pixels wide: text stays >= 9 px."""

    from transformer_lib.views.explorers import masks

    fig = {
        "positions": lambda: positions._pe_figure(128, 100, 63),
        "masks": lambda: masks._mask_figure(masks.mask_batch(), True, True, 1),
        "parameters": lambda: parameters._breakdown_figure(TransformerConfig.base(37000), "base"),
        "norm_warmup": lambda: norm_warmup._curves_figure(stored, 3e-3, 50),
    }[which]()
    assert smallest_text_css_px(fig, 80, FRAME_COLUMN_PX, tight=False) >= 9.0


# --------------------------------------------------------------------------- figures
def _pe(length: int, d_model: int) -> np.ndarray:
    pos = np.arange(length)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2)[None, :] / d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


_TOKENS = ["<bos>", "▁Danke", ".", "<eos>", "<pad>", "<pad>"]
READABLE = {
    "positional_encoding": lambda: plot_positional_encoding(_pe(100, 128)),
    "sinusoids": lambda: plot_sinusoids(_pe(100, 128), dims=[0, 1, 16, 32, 64]),
    "position_similarity": lambda: plot_position_similarity(_pe(100, 128), reference=50),
    "position_rotation": lambda: plot_position_rotation(_pe(64, 128), pairs=[0, 8, 16]),
    "mask": lambda: plot_mask(np.tril(np.ones((6, 6), bool)), _TOKENS, _TOKENS),
    "layer_norm_effect": lambda: plot_layer_norm_effect(
        np.random.default_rng(0).normal(size=(9, 128)),
        np.random.default_rng(1).normal(size=(9, 128)),
        [f"tok{i}" for i in range(9)],
    ),
}


@pytest.mark.parametrize("name", sorted(READABLE))
def test_chapter_figures_stay_readable_at_page_width(name):
    assert smallest_text_css_px(READABLE[name]()) >= 9.0
