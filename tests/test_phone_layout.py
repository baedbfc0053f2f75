"""Phone versions of wide figures (transformer_lib.views.phone_layout, scripts/vendor_js.py).

In the static book build, a figure of several panels too wide for a phone's column gets a
second PNG, its panels stacked in one column, carried inside the desktop PNG; the page
shows it on phones and takes it out of the desktop image. These tests drive the same
formatter the notebooks' inline figures go through, without a kernel.
"""

from __future__ import annotations

import importlib.util
import io
import sys
import types
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402

from transformer_lib.views import phone_layout  # noqa: E402
from transformer_lib.views.attention_maps import plot_attention_heads  # noqa: E402
from transformer_lib.views.explorers.frames import STATIC_ENV_VAR, readable_width  # noqa: E402
from transformer_lib.views.text_size import (  # noqa: E402
    _recording,
    png_text_size,
    recording_text_sizes,
    with_text_size,
)

ROOT = Path(__file__).resolve().parents[1]
WORDS = "the cat sat on the mat".split()


@pytest.fixture
def inline_png(monkeypatch):
    """``inline_png(fig, static=True)``: the PNG the book's inline figures would carry."""
    monkeypatch.setitem(matplotlib.rcParams, "figure.dpi", 100)
    monkeypatch.setitem(matplotlib.rcParams, "savefig.dpi", 100)
    formatter = _recording(lambda fig: print_figure(fig, "png", bbox_inches="tight"))

    def draw(fig, static: bool = True) -> bytes:
        if static:
            monkeypatch.setenv(STATIC_ENV_VAR, "1")
        else:
            monkeypatch.delenv(STATIC_ENV_VAR, raising=False)
        try:
            return formatter(fig)
        finally:
            plt.close(fig)

    return draw


@pytest.fixture(scope="module")
def grid_png():
    """The PNG of a 2 x 4 grid of heads, as the static build's inline figures carry it
    (drawn once for the tests that only read it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(matplotlib.rcParams, "figure.dpi", 100)
        patch.setitem(matplotlib.rcParams, "savefig.dpi", 100)
        patch.setenv(STATIC_ENV_VAR, "1")
        fig = _grid()
        try:
            return _recording(lambda f: print_figure(f, "png", bbox_inches="tight"))(fig)
        finally:
            plt.close(fig)


def _grid(rows: int = 2, cols: int = 4):
    weights = np.random.default_rng(0).dirichlet(np.ones(len(WORDS)), size=(rows * cols, 6))
    return plot_attention_heads(weights, WORDS, WORDS, ncols=cols)


def _size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _shown_text_px(png: bytes, column: int = phone_layout.PHONE_COLUMN_PX) -> float:
    """The smallest text of ``png`` in CSS px once shown in a ``column``-pixel column."""
    width, _ = _size(png)
    return png_text_size(png) * min(1.0, column / width)


def test_a_2x4_grid_gets_a_phone_version(grid_png):
    png = grid_png
    phone = phone_layout.phone_png(png)
    assert phone is not None
    desktop = phone_layout.strip_phone_png(png)
    assert readable_width(desktop) > phone_layout.PHONE_COLUMN_PX  # it needed one
    width, height = _size(phone)
    assert 330 <= width <= 440  # about 4 inches at 100 dpi
    assert height > 3 * width  # eight panels stacked: far taller than wide
    assert _shown_text_px(phone) >= phone_layout.MIN_TEXT_PX
    assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX


def test_the_phone_version_stacks_the_panels_in_one_column(monkeypatch):
    monkeypatch.setitem(matplotlib.rcParams, "savefig.dpi", 100)
    fig = _grid()
    fig.set_dpi(100)
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):  # the figure as the phone version is drawn from it
        panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
        seen["boxes"] = [ax.get_position() for ax in panels]
        seen["bars"] = [ax.get_position() for ax in fig.axes if ax not in panels]
        seen["size"] = tuple(fig.get_size_inches())
        seen["engine"] = fig.get_layout_engine()
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    with recording_text_sizes() as sizes:
        desktop = with_text_size(print_figure(fig, "png", bbox_inches="tight"), sizes)
    desktop_size = tuple(fig.get_size_inches())
    phone = phone_layout.phone_version(fig, desktop, png_text_size(desktop))
    assert phone is not None
    boxes = seen["boxes"]
    assert len(boxes) == 8
    assert max(b.x0 for b in boxes) - min(b.x0 for b in boxes) < 0.01  # one column
    tops = [b.y1 for b in boxes]
    assert tops == sorted(tops, reverse=True)  # head 0 at the top, in reading order
    assert all(a.y0 >= b.y1 for a, b in zip(boxes, boxes[1:]))  # none overlaps the next
    assert all(0 <= b.x0 and b.x1 <= 1 and 0 <= b.y0 and b.y1 <= 1 for b in boxes)
    (bar,) = seen["bars"]  # the colour bar is kept, beside the panels, at the top
    assert bar.x0 > boxes[0].x1 and abs(bar.y1 - boxes[0].y1) < 0.01
    width, height = seen["size"]
    assert width <= phone_layout.PHONE_WIDTH_IN and height > 4 * width
    # Put back for a later display: size, layout engine, positions from the layout.
    assert tuple(fig.get_size_inches()) == desktop_size
    assert fig.get_layout_engine() is seen["engine"]
    again = print_figure(fig, "png", bbox_inches="tight")
    assert abs(_size(again)[1] - _size(desktop)[1]) <= 2
    plt.close(fig)


def test_the_stacked_panels_show_their_row_and_column_labels(inline_png):
    fig = _grid(2, 2)
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    hidden = [ax for ax in panels if not ax.yaxis.get_tick_params()["labelleft"]]
    assert hidden  # the desktop grid labels the queries of its first column only
    png = inline_png(fig)
    assert phone_layout.phone_png(png) is not None
    # ... and the figure is back as it was for any later display.
    assert [ax.yaxis.get_tick_params()["labelleft"] for ax in hidden] == [False] * len(hidden)
    assert fig.get_size_inches()[0] > fig.get_size_inches()[1]
    assert all(ax.get_subplotspec().get_gridspec().ncols == 2 for ax in panels)


def test_a_single_axes_figure_gets_none(inline_png):
    fig, ax = plt.subplots(figsize=(11, 3), layout="constrained")
    ax.plot(np.arange(10), label="a line")
    ax.set_xlabel("step")
    png = inline_png(fig)
    assert readable_width(png) > phone_layout.PHONE_COLUMN_PX  # wide, yet one panel
    assert phone_layout.phone_png(png) is None


def test_a_figure_with_an_inset_gets_none(inline_png):
    fig, axes = plt.subplots(1, 3, figsize=(11, 3), layout="constrained")
    for ax in axes:
        ax.plot([0, 1, 4])
    axes[0].inset_axes([0.55, 0.55, 0.4, 0.4]).plot([1, 0])
    png = inline_png(fig)
    assert readable_width(png) > phone_layout.PHONE_COLUMN_PX
    assert phone_layout.phone_png(png) is None


def test_figure_text_and_hand_placed_axes_get_none(inline_png):
    fig, axes = plt.subplots(1, 3, figsize=(11, 3), layout="constrained")
    for ax in axes:
        ax.plot([0, 1, 4])
    fig.text(0.02, 0.02, "a note placed in figure coordinates")
    assert phone_layout.phone_png(inline_png(fig)) is None
    fig = plt.figure(figsize=(11, 3))
    fig.add_axes([0.05, 0.1, 0.4, 0.8]).plot([0, 1])
    fig.add_axes([0.55, 0.1, 0.4, 0.8]).plot([1, 0])
    assert phone_layout.phone_png(inline_png(fig)) is None


def test_nothing_outside_the_static_build(inline_png):
    png = inline_png(_grid(), static=False)
    assert phone_layout.phone_png(png) is None
    assert png_text_size(png) is not None  # the text size is recorded as before


def test_a_narrow_figure_needs_none(inline_png):
    fig, axes = plt.subplots(1, 2, figsize=(3.2, 1.8), layout="constrained")
    for ax in axes:
        ax.plot([0, 1])
    png = inline_png(fig)
    assert readable_width(png) <= phone_layout.PHONE_COLUMN_PX
    assert phone_layout.phone_png(png) is None


def test_the_chunk_round_trips():
    png = _tiny_png()
    phone = _tiny_png(7)
    carried = phone_layout.with_phone_png(png, phone)
    assert phone_layout.phone_png(carried) == phone
    assert phone_layout.strip_phone_png(carried) == png
    assert phone_layout.strip_phone_png(png) == png
    assert phone_layout.phone_png(png) is None


def _tiny_png(value: int = 0) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (4, 3), value).save(out, format="PNG")
    return out.getvalue()


def _vendor_js():
    spec = importlib.util.spec_from_file_location("vendor_js", ROOT / "scripts" / "vendor_js.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vendor_js", module)
    spec.loader.exec_module(module)
    return module


def _fake_app(tmp_path: Path, images: dict[str, bytes]):
    """What _readable_image and _strip_phone_versions read of Sphinx's app and builder."""
    src, out = tmp_path / "src", tmp_path / "html"
    (src / "jupyter_execute").mkdir(parents=True)
    (out / "_images").mkdir(parents=True)
    mapping = {}
    for name, png in images.items():
        (src / "jupyter_execute" / name).write_bytes(png)
        (out / "_images" / name).write_bytes(png)  # as Sphinx copies it
        mapping[f"jupyter_execute/{name}"] = name
    builder = types.SimpleNamespace(
        images=mapping, outdir=str(out), imagedir="_images", format="html"
    )
    return types.SimpleNamespace(builder=builder, srcdir=str(src), outdir=str(out))


def test_the_page_shows_the_phone_version_and_strips_it_from_the_desktop_png(
    inline_png, grid_png, tmp_path
):
    vendor_js = _vendor_js()
    grid = grid_png
    single_fig, ax = plt.subplots(figsize=(11, 3), layout="constrained")
    ax.plot([0, 1])
    single = inline_png(single_fig)
    app = _fake_app(tmp_path, {"grid.png": grid, "single.png": single})
    tag = '<img alt="Eight attention heads, one panel each" src="../_images/grid.png" />'
    page = vendor_js._readable_image(app, tag)
    assert page.startswith('<picture class="phone-figure">')
    assert '<source media="(max-width: 600px)" srcset="../_images/grid-phone.png">' in page
    assert 'alt="Eight attention heads, one panel each"' in page.split("<img", 1)[1]
    assert page.endswith("</picture>")
    phone_file = Path(app.outdir, "_images", "grid-phone.png")
    assert phone_file.read_bytes() == phone_layout.phone_png(grid)
    assert f"--phone-readable: {readable_width(phone_file.read_bytes())}px" in page

    plain = vendor_js._readable_image(app, '<img alt="One line" src="../_images/single.png" />')
    assert "<picture" not in plain and "max-width: max(100%," in plain

    vendor_js._strip_phone_versions(app, None)
    desktop = Path(app.outdir, "_images", "grid.png").read_bytes()
    assert phone_layout.phone_png(desktop) is None
    assert desktop == phone_layout.strip_phone_png(grid)
    assert png_text_size(desktop) == png_text_size(grid)  # the text size stays
    assert Path(app.outdir, "_images", "single.png").read_bytes() == single


def test_a_panels_own_colour_bar_stays_within_the_panels_height(inline_png, monkeypatch):
    """An image of fixed aspect draws its panel shorter than the colour bar beside it on
    the desktop; stacked, the bar must not climb over the panel's title (chapter 4's head
    explorer) nor leave room above the panel for it."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), layout="constrained")
    weights = np.random.default_rng(0).dirichlet(np.ones(len(WORDS)), size=len(WORDS))
    for ax, title in zip(axes, ("one head", "mean of the heads")):
        image = ax.imshow(weights, aspect="equal")
        ax.set_title(title)
        ax.set_xticks(range(len(WORDS)), WORDS, rotation=45)
        ax.set_yticks(range(len(WORDS)), WORDS)
    bar = fig.colorbar(image, ax=axes[1], label="weight")
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen["panel"] = axes[1].get_position(original=True)
        seen["bar"] = bar.ax.get_position(original=True)
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    png = inline_png(fig)
    assert phone_layout.phone_png(png) is not None
    panel, bar_box = seen["panel"], seen["bar"]
    assert bar_box.y0 >= panel.y0 - 1e-6 and bar_box.y1 <= panel.y1 + 1e-6
    assert bar_box.height > 0.8 * panel.height


def _blank_edges(png: bytes) -> tuple[bool, bool]:
    """Whether the image's leftmost and rightmost 3 pixel columns are all background:
    text cut off at the figure's edge touches them."""
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    background = rgb[0, 0]
    blank = lambda cols: bool((np.abs(cols - background).sum(axis=-1) < 30).all())  # noqa: E731
    return blank(rgb[:, :3]), blank(rgb[:, -3:])


def test_a_wide_legend_and_a_title_with_mathematics_fit_the_phone(inline_png):
    """A legend under the panels in one row wider than the phone goes into one column, and
    a title with $...$ is broken into lines around it: neither runs off the image."""
    fig, axes = plt.subplots(1, 3, figsize=(9, 3), layout="constrained")
    for i, ax in enumerate(axes):
        for name in ("recurrent layer", "self-attention layer", "dilated convolution (k = 3)"):
            ax.plot(np.arange(5), np.arange(5) * (i + 1), label=name)
        ax.set_title(f"panel {i}")
        ax.set_xlabel("position")
    fig.suptitle("Which positions connect to which over n = 8 positions (path from $x_0$ on)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
    png = inline_png(fig)
    phone = phone_layout.phone_png(png)
    assert phone is not None
    assert _blank_edges(phone) == (True, True)
    assert _blank_edges(phone_layout.strip_phone_png(png)) == (True, True)  # the desktop too


def test_a_colour_bar_under_its_panel_and_a_legend_under_the_next_stay_with_them(
    inline_png, monkeypatch
):
    """Chapter 5's frame: a colour bar under the table (``location="bottom"``), a legend
    under the curves' panel, a two-line title. Stacked, the bar is under its own panel
    (not beside it), the legend is inside the image and each title line is broken."""
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 4.2), layout="constrained")
    image = axes[0].imshow(np.random.default_rng(0).normal(size=(20, 40)), aspect="auto")
    axes[0].set_xlabel("dimension")
    bar = fig.colorbar(image, ax=axes[0], location="bottom", label="colour: value")
    axes[1].plot(np.arange(9), np.sin(np.arange(9)), label="a sine")
    axes[1].plot(np.arange(9), np.cos(np.arange(9)), label="a cosine")
    legend = axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    fig.suptitle("A long first line of a title that a phone must break\nand a second one")
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        boxes = [a.get_position(original=True) for a in (axes[0], bar.ax, axes[1])]
        seen["boxes"], seen["title"] = boxes, fig._suptitle.get_text()
        seen["legend"] = legend.get_window_extent().transformed(fig.transFigure.inverted())
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    png = inline_png(fig)
    assert phone_layout.phone_png(png) is not None
    table, bar_box, curves = seen["boxes"]
    assert curves.y1 < bar_box.y0 < bar_box.y1 < table.y0  # table, its bar, then the curves
    assert table.x0 - 1 <= bar_box.x0 and bar_box.x1 <= table.x1 + 1
    assert seen["legend"].y0 >= 0 and seen["legend"].y1 < curves.y0  # under, in the image
    assert seen["title"].count("\n") >= 2
    assert fig._suptitle.get_text().count("\n") == 1  # put back


def test_a_figure_can_ask_for_flatter_stacked_panels(inline_png, monkeypatch):
    """Chapter 1's Table 1 explorer: three narrow panels of three bars each are stacked
    0.6 as high as wide (not as tall as the narrow desktop panels), and the title is
    broken into lines of about equal length."""
    fig, axes = plt.subplots(1, 3, figsize=(8.4, 3.9), sharey=True, layout="constrained")
    for ax in axes:
        ax.barh(range(3), [1, 2, 3])
    fig.suptitle("n = 8,192 tokens, d = 128: self-attention does 64× more operations")
    phone_layout.set_phone_aspect(fig, 0.6)
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen["boxes"] = [ax.get_position(original=True) for ax in axes]
        seen["size"], seen["title"] = fig.get_size_inches(), fig._suptitle.get_text()
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    width, height = seen["size"]
    for box in seen["boxes"]:
        assert box.height * height == pytest.approx(0.6 * box.width * width)
    lines = seen["title"].split("\n")
    assert len(lines) >= 2 and max(map(len, lines)) - min(map(len, lines)) <= len("self-attention")


def test_the_bpe_frames_carry_a_narrower_drawing_of_their_own(monkeypatch):
    """Chapter 2's BPE explorer has one panel (nothing to stack): in the static build its
    frame carries the same tokens drawn in shorter rows, its header in two lines; outside
    it, the frame is the desktop one alone."""
    from transformer_lib.views.explorers import bpe_merges

    replay = bpe_merges.BpeReplay()
    monkeypatch.delenv(STATIC_ENV_VAR, raising=False)
    desktop = bpe_merges._frame(replay, bpe_merges.BPE_SENTENCES[-1:], 0)
    assert phone_layout.phone_png(desktop) is None
    monkeypatch.setenv(STATIC_ENV_VAR, "1")
    png = bpe_merges._frame(replay, bpe_merges.BPE_SENTENCES[-1:], 0)
    phone = phone_layout.phone_png(png)
    assert phone is not None and phone_layout.strip_phone_png(png) == desktop
    assert _size(phone)[0] <= phone_layout.PHONE_COLUMN_PX
    assert png_text_size(phone) >= phone_layout.MIN_TEXT_PX


def test_slanted_tick_labels_that_would_overlap_are_turned_upright(inline_png, monkeypatch):
    """Chapter 4's head explorer: ten tokens at 45 degrees under a panel narrowed for the
    phone overlap; stacked, they stand upright (and slant again on the desktop)."""
    tokens = ["▁The", "▁cat", "▁is", "▁sleeping", "▁on", "▁the", "▁so", "f", "a", "."]
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 5.3), layout="constrained")
    weights = np.random.default_rng(0).dirichlet(np.ones(10), size=10)
    for ax in axes:
        ax.imshow(weights)
        ax.set_xticks(range(10), tokens, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(10), tokens)
        ax.tick_params(labelsize=14)
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen["rotations"] = {t.get_rotation() for ax in axes for t in ax.get_xticklabels()}
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    assert seen["rotations"] == {90}
    assert {t.get_rotation() for ax in axes for t in ax.get_xticklabels()} == {45}


def _spy_boxes(monkeypatch, seen):
    """Record, as the phone version is drawn, its size, panels, legends and tick labels."""
    draw = phone_layout._draw

    def spy(fig, dpi):
        panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
        seen["size"] = tuple(fig.get_size_inches())
        seen["boxes"] = [ax.get_position(original=True) for ax in panels]
        seen["legends"] = [(leg.get_visible(), leg in fig.legends) for leg in _legends(fig)]
        seen["y ticks"] = [ax.yaxis.get_tick_params().get("labelleft", True) for ax in panels]
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)


def _legends(fig):
    return [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + fig.legends


def test_a_grid_can_ask_for_two_columns_on_a_phone(inline_png, monkeypatch):
    """Chapter 8's cross-attention maps: 2 rows of 5 heads become 5 rows of 2 on a phone,
    each desktop row a phone column; the right column drops the y tick labels it repeats."""
    fig, axes = plt.subplots(
        2, 5, figsize=(9.4, 5.6), sharex=True, sharey=True, layout="constrained"
    )
    weights = np.random.default_rng(0).dirichlet(np.ones(4), size=(10, 5))
    for ax, w in zip(axes.flat, weights):
        image = ax.imshow(w, vmin=0, vmax=1)
        ax.set_title("head", fontsize=13)
        ax.set_xticks(range(4), WORDS[:4], rotation=45, ha="right")
        ax.set_yticks(range(5), WORDS[:5])
        ax.tick_params(labelsize=13)
    fig.colorbar(image, ax=axes, shrink=0.8)
    fig.suptitle("Ten maps", fontsize=14)
    phone_layout.set_phone_columns(fig, 2, order="columns")
    seen = {}
    _spy_boxes(monkeypatch, seen)
    png = inline_png(fig)
    phone = phone_layout.phone_png(png)
    assert phone is not None
    boxes = seen["boxes"]
    lefts = sorted({round(b.x0, 3) for b in boxes})
    assert len(lefts) == 2  # two columns
    first, second = boxes[:5], boxes[5:]  # desktop rows 0 and 1
    assert all(round(b.x0, 3) == lefts[0] for b in first)
    assert all(round(b.x0, 3) == lefts[1] for b in second)
    tops = [b.y1 for b in first]
    assert tops == sorted(tops, reverse=True)  # heads top to bottom
    assert [round(a.y1, 3) for a in first] == [round(b.y1, 3) for b in second]  # side by side
    assert seen["y ticks"] == [True] * 5 + [False] * 5
    assert seen["size"][0] <= 1.5 * phone_layout.PHONE_WIDTH_IN
    assert _shown_text_px(phone) >= phone_layout.MIN_TEXT_PX
    assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX
    assert _size(phone)[1] < 3 * _size(phone)[0]  # not a ten-panel column
    assert all(ax.yaxis.get_tick_params().get("labelleft", True) for ax in axes[:, 0])
    with pytest.raises(ValueError):
        phone_layout.set_phone_columns(fig, 2, order="diagonal")


def test_a_lone_panel_of_curves_gets_a_narrower_phone_version(inline_png, monkeypatch):
    """Chapter 7's loss and activation curves: one panel 7.5 inches wide; plot_curves asks
    for a phone version, the panel 4 inches wide with its legend under it."""
    from transformer_lib.views.curves import plot_curves

    fig, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    x = np.linspace(-4, 4, 81)
    plot_curves(
        x,
        {"ReLU (the paper)": np.maximum(x, 0), "SiLU (the gate of SwiGLU)": x / (1 + np.exp(-x))},
        ax=ax,
        xlabel="input z",
        ylabel="activation",
        title="Two activations",
    )
    ax.annotate(
        "a note over the top edge",
        xy=(4, 4),
        xytext=(0, 4),
        textcoords="offset points",
        ha="right",
        va="bottom",
    )
    seen = {}
    _spy_boxes(monkeypatch, seen)
    png = inline_png(fig)
    phone = phone_layout.phone_png(png)
    assert phone is not None
    assert readable_width(phone_layout.strip_phone_png(png)) > phone_layout.PHONE_COLUMN_PX
    assert _size(phone)[0] <= phone_layout.PHONE_WIDTH_IN * 100 + 2
    assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX
    # the axes' legend hidden, one in the figure under the panel; both put back after
    assert seen["legends"] == [(False, False), (True, True)]
    assert ax.get_legend().get_visible() and not fig.legends
    box = seen["boxes"][0]
    assert box.height * seen["size"][1] == pytest.approx(0.7 * box.width * seen["size"][0])


def test_labels_too_wide_for_four_inches_take_the_widest_readable_phone_width(inline_png):
    """Chapter 13's scoreboard: 27 runs named by their bug ids (up to 38 characters) beside
    two bar panels; at 4 inches the names leave the panels too little room, so the stacked
    version is as wide as its 9-point text allows, each panel 0.23 inch a row."""
    from transformer_lib.views.debugging import load_runs, plot_scoreboard

    runs = load_runs()["runs"]
    png = inline_png(plot_scoreboard(runs))
    phone = phone_layout.phone_png(png)
    assert phone is not None
    width, height = _size(phone)
    assert phone_layout.PHONE_WIDTH_IN * 100 < width
    assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX
    assert height > 2 * 0.23 * len(runs) * 100  # two panels of a row per run


def test_the_residual_diagram_stacks_its_two_columns(inline_png):
    """Chapter 7's post-LN / pre-LN diagram is two panels of a grid: a phone stacks them."""
    from transformer_lib.views.layer_norm import plot_residual_sublayers

    phone = phone_layout.phone_png(inline_png(plot_residual_sublayers()))
    assert phone is not None
    width, height = _size(phone)
    assert height > width and width <= phone_layout.PHONE_COLUMN_PX + 50
    assert _shown_text_px(phone) >= phone_layout.MIN_TEXT_PX


def test_a_figure_can_carry_a_drawing_of_its_own_for_the_phone(inline_png):
    """Chapter 8's data flow is one diagram (nothing to stack): plot_data_flow lays it out
    anew 4.85 inches wide, the masks named shorter, for the phone version."""
    from transformer_lib import TransformerConfig
    from transformer_lib.views.architecture import plot_data_flow

    config = TransformerConfig.tiny(4000)
    png = inline_png(plot_data_flow(config))
    phone = phone_layout.phone_png(png)
    assert phone is not None
    assert readable_width(phone_layout.strip_phone_png(png)) > phone_layout.PHONE_COLUMN_PX
    assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX
    assert not plt.get_fignums()  # the narrow drawing is closed, never shown by itself
    narrow = [t.get_text() for t in plot_data_flow(config, narrow=True).axes[0].texts]
    assert "padding mask (B, 1, 1, S)" in narrow and "causal + padding (B, 1, T, T)" in narrow
    plt.close("all")
    assert phone_layout.phone_png(inline_png(plot_data_flow(config), static=False)) is None


def test_the_parameter_frames_carry_a_narrower_drawing_of_their_own(monkeypatch):
    """Chapter 8's parameter explorer: one panel of bars 9 inches wide; in the static build
    each frame carries the bars drawn 4.3 inches wide, the parts' names in two lines; the
    desktop frame is the same as without it."""
    from transformer_lib import TransformerConfig
    from transformer_lib.views.explorers import parameters

    config = TransformerConfig.base(37000)
    monkeypatch.delenv(STATIC_ENV_VAR, raising=False)
    desktop = parameters._frame(config, "base", 120.0, {})
    assert phone_layout.phone_png(desktop) is None
    assert readable_width(desktop) > phone_layout.PHONE_COLUMN_PX
    monkeypatch.setenv(STATIC_ENV_VAR, "1")
    png = parameters._frame(config, "base", 120.0, {})
    phone = phone_layout.phone_png(png)
    assert phone is not None and phone_layout.strip_phone_png(png) == desktop
    assert _size(phone)[0] <= phone_layout.PHONE_COLUMN_PX
    assert png_text_size(phone) >= phone_layout.MIN_TEXT_PX
    assert parameters._two_lines("embeddings and output matrix") == "embeddings and\noutput matrix"
    assert parameters._two_lines("decoder cross-attention") == "decoder\ncross-attention"


def test_tick_labels_that_would_touch_in_a_narrowed_panel_are_thinned(inline_png, monkeypatch):
    """Chapter 3's gradient curves over d_k = 1 to 1024: eleven upright labels would touch
    on a panel narrowed for the phone; it shows every other one, the desktop all."""
    from transformer_lib.views.curves import plot_curves

    dks = [2**i for i in range(11)]
    fig = plot_curves(
        dks,
        {"a": np.linspace(1, 2, 11)},
        xlabel="d_k",
        ylabel="y",
        title="eleven powers of two",
        logx=True,
    )
    ax = fig.axes[0]
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen["shown"] = [
            t.label1.get_text() for t in ax.xaxis.get_major_ticks() if t.label1.get_visible()
        ]
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    assert seen["shown"] == ["1", "4", "16", "64", "256", "1024"]
    assert all(t.label1.get_visible() for t in ax.xaxis.get_major_ticks())


def test_a_shared_colour_bar_stays_beside_its_own_panels(inline_png, monkeypatch):
    """Chapter 3's weighted sum: the bar shared by the weighted rows and the output row
    goes beside the first of them on the phone, no longer than the run of its panels,
    not beside the panel at the top (there it covered the weights' x ticks)."""
    from transformer_lib.views.projections import plot_weighted_sum

    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(len(WORDS)))
    fig = plot_weighted_sum(w, rng.normal(size=(len(WORDS), 32)), WORDS, query=1)
    weights, _, weighted = fig.axes[:3]
    shared = fig.axes[-1]
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen.update(
            {n: a.get_position(original=True) for n, a in
             (("weights", weights), ("weighted", weighted), ("bar", shared))}
        )  # fmt: skip
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    bar, panel = seen["bar"], seen["weighted"]
    assert abs(bar.y1 - panel.y1) < 1e-6 and bar.y0 >= panel.y0 - 1e-6
    assert bar.y0 > seen["weights"].y1 or bar.y1 < seen["weights"].y0


def test_a_compressed_layouts_title_stays_inside_the_phone_version(inline_png, monkeypatch):
    """Chapter 5's rotation figure: the compressed layout hangs the figure's title from
    its bottom edge; stacked, the title (in two lines) must start inside the figure."""
    from transformer_lib.components.positional import sinusoidal_positional_encoding
    from transformer_lib.views.positions import plot_position_rotation

    fig = plot_position_rotation(sinusoidal_positional_encoding(64, 128), pairs=[0, 8, 16])
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        renderer = fig.canvas.get_renderer()
        seen["title"] = fig._suptitle.get_window_extent(renderer).y1 / (fig.bbox.height)
        seen["lines"] = fig._suptitle.get_text().count("\n") + 1
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    assert seen["lines"] == 2 and seen["title"] < 1.0
    assert fig._suptitle.get_verticalalignment() == "bottom"  # put back


def test_automatic_x_ticks_are_not_thinned(inline_png, monkeypatch):
    """An automatic locator picks fewer ticks for the narrower panel by itself; hiding
    some of the desktop's ticks would hide others once they are placed anew (chapter 5's
    learned encodings kept only '0' of -20, 0, 20)."""
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), layout="constrained")
    for ax in axes:
        ax.plot(np.arange(-32, 32), np.sin(np.arange(64)))
        ax.set_title("a long title that makes the figure want a phone version")
    seen = {}
    draw = phone_layout._draw

    def spy(fig, dpi):
        seen["hidden"] = [
            t for a in axes for t in a.xaxis.get_major_ticks() if not t.label1.get_visible()
        ]
        return draw(fig, dpi)

    monkeypatch.setattr(phone_layout, "_draw", spy)
    assert phone_layout.phone_png(inline_png(fig)) is not None
    assert seen["hidden"] == []


@pytest.mark.parametrize("name", ["kv_cache", "projections", "positions", "curves"])
def test_chapter_figures_get_phone_versions_that_fit(inline_png, name):
    """Chapters 3, 5 and 10: Figure 10.1 (the KV cache) and 3.3 (the projections) draw a
    narrow layout of their own; chapter 5's table and sinusoids and chapter 3's variance
    and saturation curves are drawn narrower. Each phone version reads in a phone's column."""
    from transformer_lib.components.positional import sinusoidal_positional_encoding
    from transformer_lib.views import curves, positions
    from transformer_lib.views.kv_cache import plot_kv_cache
    from transformer_lib.views.projections import plot_projections

    tokens = ["<bos>", "▁Wo", "▁ist", "▁die"]
    source = ["▁Where", "▁is", "▁the", "▁station", "?", "<eos>"]
    pe = sinusoidal_positional_encoding(100, 128)
    figures = {
        "kv_cache": lambda: [
            plot_kv_cache(
                tokens, source, [1, 2, 3, 4], [True, False, False, False], heads=4, d_k=32
            )
        ],
        "projections": lambda: [plot_projections(WORDS * 2, 128, 32, highlight=1)],
        "positions": lambda: [positions.plot_positional_encoding(pe), positions.plot_sinusoids(pe)],
        "curves": lambda: [curves.plot_dot_product_variance(), curves.plot_softmax_saturation()],
    }[name]
    for fig in figures():
        png = inline_png(fig)
        phone = phone_layout.phone_png(png)
        assert phone is not None
        assert readable_width(phone_layout.strip_phone_png(png)) > phone_layout.PHONE_COLUMN_PX
        assert readable_width(phone) <= phone_layout.PHONE_COLUMN_PX


def test_the_beam_frames_carry_a_phone_drawing_of_their_own():
    """Chapter 10's beam explorer: the tree cannot be squeezed (its nodes would overlap),
    so each frame's phone version is the tree drawn 5.3 inches wide for seven steps, its
    10-point text then 9 CSS px or more in a phone's column."""
    from transformer_lib.views.explorers import beam
    from transformer_lib.views.explorers.frames import FRAME_DPI

    px = beam._phone_width(7) * FRAME_DPI
    text_px = 10 * FRAME_DPI / 72
    assert text_px * phone_layout.PHONE_COLUMN_PX / px >= phone_layout.MIN_TEXT_PX
    assert beam._phone_width(7) < beam._frame_width(7)
