"""The book's figure style and the helpers every figure module shares.

Every ``plot_*`` function in :mod:`transformer_lib.views` draws with matplotlib only and
returns the :class:`matplotlib.figure.Figure` it drew on, so a chapter cell reads like a
sentence (``plot_positional_encoding(pe)``) and a script can still call
``fig.savefig(...)``. Functions that draw a single panel also accept ``ax=`` to draw into
an existing axes. This module holds what they share:

* **Rows are queries, columns are keys.** An attention matrix of shape ``(Tq, Tk)`` is
  drawn with query tokens on the y axis ("query (attends from)") and key tokens on the x
  axis ("key (attends to)"), exactly as it is indexed: ``weights[i, j]`` is how much query
  ``i`` attends to key ``j``.
* **Masks: True = may attend**, as in :mod:`transformer_lib.components.masks`.
* Colour-blind-safe colours: ``viridis`` for values in ``[0, 1]``, the diverging
  ``RdBu_r`` centred at 0 for signed values, and the Okabe-Ito palette for lines and bars
  (:data:`OKABE_ITO`); font sizes and the colour cycle in ``_RC``, applied by ``@_styled``.
* Inputs may be PyTorch tensors (on any device, with or without grad) or NumPy arrays;
  torch is never imported by the figure modules (``_to_numpy``).

In Jupyter a figure returned by these helpers is shown exactly once, whether the cell ends
with the call, with ``fig = ...`` or with a trailing ``;`` (``_show_once``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["OKABE_ITO", "SEQUENTIAL_CMAP", "DIVERGING_CMAP", "LAYER_STYLES", "SCALING_STYLES"]


# Okabe & Ito (2008), "Color Universal Design": distinguishable with every
# common form of colour blindness. Ordered for line plots: yellow is last
# because thin yellow lines vanish on white.
OKABE_ITO = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#E69F00",  # orange
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
SEQUENTIAL_CMAP = "viridis"

# One colour per kind of layer, the same in every figure and explorer that compares them
# (chapter 1): matplotlib keyword arguments for a line of that kind.
LAYER_STYLES = {
    "recurrent": {"color": OKABE_ITO[1], "marker": "o", "linestyle": "-"},
    "convolution": {"color": OKABE_ITO[2], "marker": "^", "linestyle": "--"},
    "self-attention": {"color": OKABE_ITO[0], "marker": "s", "linestyle": "-"},
}
# Scaled and unscaled attention scores (chapter 3): one colour and one marker each.
SCALING_STYLES = {
    "scaled": {"color": OKABE_ITO[0], "marker": "s"},
    "unscaled": {"color": OKABE_ITO[1], "marker": "o"},
}
DIVERGING_CMAP = "RdBu_r"  # blue = negative, white = 0, red = positive

_RC = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 13,
    "axes.prop_cycle": mpl.cycler(color=OKABE_ITO),
    "image.cmap": SEQUENTIAL_CMAP,
}
_QUERY_LABEL = "query (attends from)"
_KEY_LABEL = "key (attends to)"
F = TypeVar("F", bound=Callable[..., Figure])


def _styled(func: F) -> F:
    """Draw ``func``'s figure with the book's font sizes and colour cycle."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with mpl.rc_context(_RC):
            fig = func(*args, **kwargs)
            # The first pyplot figure loads the backend, and Jupyter's inline backend
            # then turns interactive mode on; rc_context would undo that on exit and
            # later figures would no longer be shown at the end of a cell.
            interactive = mpl.is_interactive()
        mpl.interactive(interactive)
        return fig

    return wrapper  # type: ignore[return-value]


def _to_numpy(x: Any) -> np.ndarray:
    """Return ``x`` as a NumPy array; accepts tensors on any device, lists, arrays."""
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        x = x.detach()
        if str(x.dtype) in ("torch.bfloat16", "torch.float16"):
            x = x.float()  # NumPy has no bfloat16
        x = x.cpu().numpy()
    return np.asarray(x)


def _squeeze_to(x: Any, ndim: int, what: str, func: str, shape_doc: str) -> np.ndarray:
    """Drop leading size-1 axes (a batch of one, a single head) until ``x`` has ``ndim`` axes."""
    arr = _to_numpy(x)
    while arr.ndim > ndim and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != ndim:
        raise ValueError(
            f"{func}: {what} must have shape {shape_doc}, got shape {tuple(arr.shape)}. "
            "Select one example (and head) first, e.g. x[0] or weights[0, h]."
        )
    return arr


def _show_once(fig: Figure) -> None:
    """IPython display hook attached to the figures we create.

    Jupyter's inline backend draws every open pyplot figure at the end of a cell,
    and it also displays the cell's return value: a returned figure would appear
    twice. When IPython asks this figure to display itself we show it and close
    it, so the end-of-cell flush skips it. Closing does not stop later
    ``fig.savefig(...)`` or re-display.
    """
    from IPython.display import display

    hook = fig.__dict__.pop("_ipython_display_", None)
    try:
        display(fig)
    finally:
        if hook is not None:
            fig._ipython_display_ = hook  # type: ignore[attr-defined]
    plt.close(fig)


def _add_display_hook(fig: Figure) -> None:
    if "_ipython_display_" not in fig.__dict__:
        fig._ipython_display_ = functools.partial(_show_once, fig)  # type: ignore[attr-defined]


def _new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **kw: Any):
    """``plt.subplots`` with constrained layout, plus the show-once display hook."""
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", **kw)
    _add_display_hook(fig)
    return fig, axes


def _root_figure(ax: Axes) -> Figure:
    try:
        fig = ax.get_figure(root=True)  # matplotlib >= 3.10
    except TypeError:
        fig = ax.figure
    while not isinstance(fig, Figure):  # a SubFigure on older matplotlib
        fig = fig.figure
    return fig


def _figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        fig = _root_figure(ax)
        _add_display_hook(fig)
        return fig, ax
    return _new_figure(figsize)


def _label_text(token: Any) -> str:
    """A token as a tick label: `$` escaped (no mathtext), blanks made visible."""
    s = str(token)
    if s == "":
        return "''"
    if s.isspace():
        return s.replace(" ", "␣").replace("\n", "\\n").replace("\t", "\\t")
    return s.replace("$", r"\$")


def _token_labels(tokens: Any, n: int, what: str, func: str, hint: str = "") -> list[str] | None:
    if tokens is None:
        return None
    if hasattr(tokens, "tolist"):
        tokens = tokens.tolist()
    if isinstance(tokens, str):
        raise ValueError(f"{func}: {what} must be a list of tokens, not one string {tokens!r}.")
    tokens = list(tokens)
    if len(tokens) != n:
        raise ValueError(
            f"{func}: got {len(tokens)} {what} but the matrix has {n} "
            f"{'rows (queries)' if 'query' in what else 'columns (keys)'}; "
            f"rows are queries and columns are keys, one token per row/column.{hint}"
        )
    return [_label_text(t) for t in tokens]


def _swap_hint(q: Any, k: Any, tq: int, tk: int) -> str:
    if q is not None and k is not None and len(q) == tk and len(k) == tq and tq != tk:
        return " The counts match if you swap query_tokens and key_tokens."
    return ""


def _tick_fontsize(n: int, cell_inches: float) -> float:
    """A font size that lets ``n`` labels fit along ``cell_inches`` of axis."""
    points_per_label = cell_inches * 72 / max(n, 1)
    return float(np.clip(0.8 * points_per_label, 6, 10))


def _set_token_ticks(
    ax: Axes,
    x_labels: list[str] | None,
    y_labels: list[str] | None,
    fontsize: float | None = None,
) -> None:
    if x_labels is not None:
        ax.set_xticks(np.arange(len(x_labels)))
        ax.set_xticklabels(
            x_labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=fontsize
        )
    if y_labels is not None:
        ax.set_yticks(np.arange(len(y_labels)))
        ax.set_yticklabels(y_labels, fontsize=fontsize)


def _integer_ticks(ax: Axes) -> None:
    """Integer positions on axes still using automatic ticks (not token labels)."""
    for axis in (ax.xaxis, ax.yaxis):
        locator = axis.get_major_locator()
        if isinstance(locator, MaxNLocator):
            locator.set_params(integer=True)


def _annotate_cells(ax: Axes, im: Any, data: np.ndarray, fmt: str, fontsize: float) -> None:
    """Write each cell's value on a heatmap, black on light cells and white on dark ones."""
    rgba = im.cmap(im.norm(data))
    luminance = rgba[..., :3] @ np.array([0.2126, 0.7152, 0.0722])
    for (i, j), v in np.ndenumerate(data):
        if np.isnan(v):
            continue
        ax.text(
            j,
            i,
            format(v, fmt),
            ha="center",
            va="center",
            fontsize=fontsize,
            color="black" if luminance[i, j] > 0.45 else "white",
        )


def _check_range(data: np.ndarray, vmin: float | None, vmax: float | None, func: str) -> None:
    finite = data[np.isfinite(data)]
    if finite.size == 0:
        return
    lo, hi = float(finite.min()), float(finite.max())
    if (vmin is not None and lo < vmin - 1e-6) or (vmax is not None and hi > vmax + 1e-6):
        raise ValueError(
            f"{func}: values span [{lo:.3g}, {hi:.3g}], outside the colour range "
            f"[{vmin}, {vmax}]. Attention weights are softmax outputs in [0, 1]; to plot "
            "raw scores pass vmin=None, vmax=None (and perhaps cmap='RdBu_r')."
        )


def _symmetric_limit(data: np.ndarray) -> float:
    finite = np.abs(data[np.isfinite(data)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0
