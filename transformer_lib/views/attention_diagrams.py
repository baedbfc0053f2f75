"""The paper's Figure 2, redrawn: scaled dot-product attention and multi-head attention.

Chapter 3 shows the left panel (Eq. 1 as a flow of operations), chapter 4 both panels
(§3.2.2: h heads side by side between linear projections). The boxes are drawn bottom-up
as in the paper, with the arrows of :mod:`~transformer_lib.views.architecture`.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .architecture import _path, _rounded_box
from .style import _new_figure, _styled

__all__ = ["plot_attention_diagram"]


_DIAGRAM_STYLE = {
    # kind: (face, edge): light tints of the Okabe-Ito colours, as in the architecture.
    "matmul": ("#D9C8E6", "#8E6BB0"),
    "scale": ("#F6F1A8", "#B8A800"),
    "mask": ("#EBC9DC", "#CC79A7"),
    "softmax": ("#99D8C7", "#009E73"),
    "linear": ("#CFE3F3", "#0072B2"),
    "attention": ("#F5CF99", "#E69F00"),
    "concat": ("#F6F1A8", "#B8A800"),
}
_PANELS = ("scaled", "multi-head")


def _block(
    ax: Axes, xc: float, yc: float, w: float, h: float, text: str, kind: str, *, dashed=False
) -> None:
    _rounded_box(
        ax, xc, yc, w, h, _DIAGRAM_STYLE[kind], rounding=0.12,
        linestyle="--" if dashed else "-",
    )  # fmt: skip
    ax.text(xc, yc, text, ha="center", va="center", fontsize=10.5, zorder=4)


def _stacked(ax: Axes, xc: float, yc: float, w: float, h: float, text: str, kind: str) -> None:
    """A block drawn h times, each copy offset up and to the right: one per head."""
    for k in (2, 1):
        _block(ax, xc + 0.14 * k, yc + 0.14 * k, w, h, "", kind)
    _block(ax, xc, yc, w, h, text, kind)


def _input(ax: Axes, x: float, y: float, name: str) -> None:
    ax.text(x, y, name, ha="center", va="center", fontsize=12, style="italic")


def _scaled_panel(ax: Axes) -> None:
    w, h = 2.4, 0.62
    xq, xk, xv = 0.9, 2.3, 3.9
    xc = (xq + xk) / 2
    for x, name in ((xq, "Q"), (xk, "K"), (xv, "V")):
        _input(ax, x, 0.3, name)
    _path(ax, [(xq, 0.55), (xq, 1.2)])
    _path(ax, [(xk, 0.55), (xk, 1.2)])
    _block(ax, xc, 1.5, w, h, r"MatMul  $QK^\top$", "matmul")
    _path(ax, [(xc, 1.81), (xc, 2.35)])
    _block(ax, xc, 2.65, w, h, r"Scale  $\div\sqrt{d_k}$", "scale")
    _path(ax, [(xc, 2.96), (xc, 3.5)])
    _block(ax, xc, 3.8, w, h, "Mask (opt.)", "mask", dashed=True)
    _path(ax, [(xc, 4.11), (xc, 4.65)])
    _block(ax, xc, 4.95, w, h, "SoftMax", "softmax")
    xm = (xc + xv) / 2 + 0.2
    _path(ax, [(xc, 5.26), (xc, 5.75), (xm - 0.5, 5.75), (xm - 0.5, 6.19)])
    _path(ax, [(xv, 0.55), (xv, 5.75), (xm + 0.5, 5.75), (xm + 0.5, 6.19)])
    _block(ax, xm, 6.5, w, h, "MatMul", "matmul")
    _path(ax, [(xm, 6.81), (xm, 7.45)])
    ax.text(xm, 7.7, "output", ha="center", va="center", fontsize=11)
    ax.text(xc - 0.1, 5.52, "weights", ha="right", va="center", fontsize=10, color="#444444")
    ax.set_xlim(-0.9, 5.3)
    ax.set_ylim(0, 8.1)
    ax.set_title("Scaled dot-product attention\n(Eq. 1)", fontsize=12)


def _multi_head_panel(ax: Axes) -> None:
    w, h = 1.3, 0.6
    xs = {"V": 0.7, "K": 2.2, "Q": 3.7}
    for name, x in xs.items():
        _input(ax, x, 0.3, name)
        _path(ax, [(x, 0.55), (x, 1.2)])
        _stacked(ax, x, 1.5, w, h, "Linear", "linear")
        _path(ax, [(x, 1.8), (x, 2.65)])
    xa = xs["K"]
    _stacked(ax, xa, 3.3, 4.3, 1.1, "Scaled dot-product\nattention", "attention")
    ax.text(xa + 2.55, 3.45, "h", ha="left", va="center", fontsize=14, fontweight="bold")
    _path(ax, [(xa, 3.85), (xa, 4.75)])
    _block(ax, xa, 5.05, 2.2, h, "Concat", "concat")
    _path(ax, [(xa, 5.35), (xa, 5.95)])
    _block(ax, xa, 6.25, 2.2, h, r"Linear  $W^O$", "linear")
    _path(ax, [(xa, 6.55), (xa, 7.45)])
    ax.text(xa, 7.7, "output", ha="center", va="center", fontsize=11)
    ax.set_xlim(-0.9, 5.3)
    ax.set_ylim(0, 8.1)
    ax.set_title("Multi-head attention\n(§3.2.2, h heads)", fontsize=12)


@_styled
def plot_attention_diagram(
    panel: str = "both",
    title: str = "Attention, after Figure 2 of the paper",
) -> Figure:
    """The paper's Figure 2 redrawn: scaled dot-product attention and multi-head attention.

    Left (``"scaled"``): Q and K multiplied, scaled by 1/√d_k, optionally masked, turned
    into weights by a softmax and multiplied with V (Eq. 1, chapter 3). Right
    (``"multi-head"``): V, K and Q each through a linear projection per head, h scaled
    dot-product attentions side by side, concatenated and projected by W^O (§3.2.2,
    chapter 4). Stacked boxes are repeated once per head.

    Args:
        panel: ``"scaled"``, ``"multi-head"`` or ``"both"``.
        title: the figure's title above the panels' own (none if empty).
    """
    panels = _PANELS if panel == "both" else (panel,)
    if any(p not in _PANELS for p in panels):
        raise ValueError(f"panel must be 'scaled', 'multi-head' or 'both', got {panel!r}")
    fig, axes = _new_figure((3.4 * len(panels), 4.9), 1, len(panels), squeeze=False)
    for ax, name in zip(axes[0], panels):
        ax.set_aspect("equal")
        ax.axis("off")
        (_scaled_panel if name == "scaled" else _multi_head_panel)(ax)
    if title:
        fig.suptitle(title)
    return fig
