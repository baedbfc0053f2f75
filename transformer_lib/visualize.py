"""Plotting helpers for the book: one call per figure.

Every function draws with matplotlib only and returns the
:class:`matplotlib.figure.Figure` it drew on, so a chapter cell reads like a
sentence (``plot_positional_encoding(pe)``) and a script can still call
``fig.savefig(...)``. Functions that draw a single panel also accept ``ax=`` to
draw into an existing axes.

Conventions used by every figure:

* **Rows are queries, columns are keys.** An attention matrix of shape
  ``(Tq, Tk)`` is drawn with query tokens on the y axis ("query (attends
  from)") and key tokens on the x axis ("key (attends to)"), exactly as it is
  indexed: ``weights[i, j]`` is how much query ``i`` attends to key ``j``.
* **Masks: True = may attend**, as in ``transformer_lib.masks``.
* Colour-blind-safe colours: ``viridis`` for values in ``[0, 1]``, the
  diverging ``RdBu_r`` centred at 0 for signed values, and the Okabe-Ito
  palette for lines and bars.
* Inputs may be PyTorch tensors (on any device, with or without grad) or NumPy
  arrays; torch is never imported by this module.

In Jupyter a figure returned by these helpers is shown exactly once, whether
the cell ends with the call, with ``fig = ...`` or with a trailing ``;``.

Which chapter uses what:

====================================  ==========================================
Chapter                               Helpers
====================================  ==========================================
1 Why attention                       :func:`plot_architecture`,
                                      :func:`plot_recurrence_vs_attention`,
                                      :func:`plot_curves`
2 Tokens and embeddings               :func:`plot_embedding_norms`,
                                      :func:`plot_length_histogram`
3 Scaled dot-product attention        :func:`plot_attention`,
                                      :func:`plot_dot_product_variance`,
                                      :func:`plot_softmax_saturation`,
                                      :func:`plot_curves`
4 Multi-head attention                :func:`plot_attention_heads`
5 Positional encoding                 :func:`plot_positional_encoding`,
                                      :func:`plot_sinusoids`,
                                      :func:`plot_position_similarity`
6 Masks                               :func:`plot_mask`
8 Encoder-decoder                     :func:`plot_architecture`
9 Training                            :func:`plot_lr_schedule`,
                                      :func:`plot_label_smoothing`,
                                      :func:`plot_training_log`
10 Decoding and evaluation            :func:`plot_beam_search`
11 Inside the trained model           :func:`plot_attention_layers_heads`,
                                      :func:`plot_head_importance`,
                                      :func:`plot_head_statistics`,
                                      :func:`plot_attention_alignment`
====================================  ==========================================
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable, TypeVar

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyBboxPatch, Patch, Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

__all__ = [
    "OKABE_ITO",
    "SEQUENTIAL_CMAP",
    "DIVERGING_CMAP",
    "plot_attention",
    "plot_attention_heads",
    "plot_attention_layers_heads",
    "plot_head_importance",
    "plot_mask",
    "plot_positional_encoding",
    "plot_sinusoids",
    "plot_position_similarity",
    "plot_lr_schedule",
    "plot_label_smoothing",
    "plot_training_log",
    "plot_dot_product_variance",
    "plot_softmax_saturation",
    "plot_embedding_norms",
    "plot_architecture",
    "plot_recurrence_vs_attention",
    "plot_beam_search",
    "plot_curves",
    "plot_length_histogram",
]

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
_LINE = "#333333"  # arrows and outlines in diagrams

F = TypeVar("F", bound=Callable[..., Figure])


# --- helpers --------------------------------------------------------------------------------------
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


def _sinusoidal_pe(length: int, d_model: int) -> np.ndarray:
    """The library's sinusoidal table (§3.5), for figures that need a default input."""
    import torch  # imported only when a figure needs the default table

    from .components.positional import sinusoidal_positional_encoding

    return sinusoidal_positional_encoding(length, d_model, dtype=torch.float64).numpy()


# --- attention ------------------------------------------------------------------------------------
@_styled
def plot_attention(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    ax: Axes | None = None,
    title: str = "Attention weights",
    cmap: str = SEQUENTIAL_CMAP,
    annotate: bool = False,
    *,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    colorbar: bool = True,
    cbar_label: str = "attention weight",
    fmt: str = ".2f",
) -> Figure:
    """Heatmap of one attention matrix; rows are queries, columns are keys (chapters 3, 4, 11).

    Cell ``(i, j)`` shows how much query ``i`` attends to key ``j``; each row of
    softmax weights sums to 1. Fully masked rows (NaN) are drawn grey.

    Args:
        weights: ``(Tq, Tk)`` attention weights. Leading axes of size 1 (a batch of
            one, a single head) are dropped, so ``(1, 1, Tq, Tk)`` works too.
        query_tokens: ``Tq`` labels for the rows (y axis).
        key_tokens: ``Tk`` labels for the columns (x axis).
        ax: draw into this axes instead of a new figure.
        title: axes title.
        cmap: a sequential colour map.
        annotate: write each weight in its cell (best for matrices up to ~12 x 12).
        vmin, vmax: colour range; ``None`` uses the data's range. With the default
            ``[0, 1]`` values outside it raise ``ValueError`` (probably scores, not
            weights).
        colorbar: add a colour bar labelled ``cbar_label``.
        fmt: number format for ``annotate``.

    Raises:
        ValueError: if ``weights`` is not 2-D or a token list does not match its side.

    Example:
        >>> fig = plot_attention(w[0, 0], src_tokens, src_tokens)  # doctest: +SKIP
    """
    func = "plot_attention"
    data = _squeeze_to(weights, 2, "weights", func, "(Tq, Tk)").astype(float)
    tq, tk = data.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)
    if vmin == 0.0 and vmax == 1.0:
        _check_range(data, vmin, vmax, func)

    width = float(np.clip(0.45 * tk + 2.8, 4.0, 12.0))
    height = float(np.clip(0.45 * tq + 1.8, 3.0, 10.0))
    fig, ax = _figure_and_axes(ax, (width, height))
    cm = mpl.colormaps[cmap].with_extremes(bad="#BBBBBB")
    im = ax.imshow(data, cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
    fontsize = _tick_fontsize(max(tq, tk), 0.45 * max(tq, tk))
    _set_token_ticks(ax, x_labels, y_labels, fontsize)
    if x_labels is None or y_labels is None:
        _integer_ticks(ax)
    ax.set_xlabel(_KEY_LABEL if x_labels is not None else f"{_KEY_LABEL}, position")
    ax.set_ylabel(_QUERY_LABEL if y_labels is not None else f"{_QUERY_LABEL}, position")
    ax.set_title(title)
    if annotate:
        _annotate_cells(ax, im, data, fmt, fontsize=9 if max(tq, tk) <= 8 else 7)
    if colorbar:
        fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


def _heatmap_grid(
    mats: np.ndarray,
    query_tokens: Sequence[Any] | None,
    key_tokens: Sequence[Any] | None,
    *,
    func: str,
    title: str,
    cmap: str,
    vmin: float | None,
    vmax: float | None,
    cbar_label: str,
    col_titles: list[str],
    row_labels: list[str] | None,
    ncols: int,
    annotate: bool = False,
    fmt: str = ".2f",
) -> Figure:
    """Shared code for head grids: ``mats`` is ``(n_panels, Tq, Tk)`` laid out row-major."""
    n, tq, tk = mats.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)
    if vmin == 0.0 and vmax == 1.0:
        _check_range(mats, vmin, vmax, func)
    if vmax is None:
        vmax = float(np.nanmax(mats))
    if vmin is None:
        vmin = float(np.nanmin(mats))

    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    label_room = 0.9 if y_labels is not None else 0.5
    cell = float(np.clip(0.22 * max(tq, tk) + 0.8, 1.6, 3.6))
    cell = min(cell, (13.0 - label_room - 1.3) / ncols, (14.0 - label_room - 0.6) / nrows)
    fig, axes = _new_figure(
        (ncols * cell + label_room + 1.3, nrows * cell + label_room + 0.6),
        nrows,
        ncols,
        squeeze=False,
    )
    cm = mpl.colormaps[cmap].with_extremes(bad="#BBBBBB")
    fontsize = _tick_fontsize(max(tq, tk), cell)
    used = []
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.remove()
            continue
        r, c = divmod(idx, ncols)
        im = ax.imshow(mats[idx], cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
        used.append(ax)
        bottom = idx + ncols >= n  # nothing drawn below this panel
        _set_token_ticks(ax, x_labels, y_labels, fontsize)
        if x_labels is None or y_labels is None:
            _integer_ticks(ax)
        if not bottom:
            ax.tick_params(labelbottom=False)
        if c != 0:
            ax.tick_params(labelleft=False)
        if col_titles[idx]:
            ax.set_title(col_titles[idx], fontsize=11)
        if row_labels is not None and c == 0:
            ax.set_ylabel(row_labels[r], fontsize=11, fontweight="bold")
        elif row_labels is None:
            if c == 0:
                ax.set_ylabel(_QUERY_LABEL, fontsize=10)
            if bottom:
                ax.set_xlabel(_KEY_LABEL, fontsize=10)
        if annotate:
            _annotate_cells(ax, im, mats[idx], fmt, fontsize=7)
    if row_labels is not None:
        fig.supxlabel(_KEY_LABEL, fontsize=11)
        fig.supylabel(_QUERY_LABEL, fontsize=11)
    fig.colorbar(im, ax=used, label=cbar_label, shrink=min(0.9, 0.5 + 0.2 * nrows), aspect=30)
    fig.suptitle(title)
    return fig


@_styled
def plot_attention_heads(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention weights per head",
    ncols: int = 4,
    *,
    cmap: str = SEQUENTIAL_CMAP,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    head_labels: Sequence[str] | None = None,
    cbar_label: str = "attention weight",
) -> Figure:
    """Grid of attention heads of one layer with one shared colour bar (chapters 4, 11).

    Each panel is titled "head h" (0-based, as the tensor is indexed); rows are
    queries and columns are keys, as in :func:`plot_attention`.

    Args:
        weights: ``(H, Tq, Tk)``; ``(1, H, Tq, Tk)`` from a batch of one works too.
        query_tokens, key_tokens: labels for rows and columns.
        title: figure title.
        ncols: panels per row.
        vmin, vmax: shared colour range (``None`` = data range). Lowering ``vmax``
            brings out weak patterns.
        head_labels: panel titles instead of "head h".
    """
    data = _squeeze_to(weights, 3, "weights", "plot_attention_heads", "(H, Tq, Tk)")
    n_heads = data.shape[0]
    titles = list(head_labels) if head_labels is not None else [f"head {h}" for h in range(n_heads)]
    if len(titles) != n_heads:
        raise ValueError(
            f"plot_attention_heads: {len(titles)} head_labels for {n_heads} heads; "
            "give one label per head."
        )
    return _heatmap_grid(
        data.astype(float),
        query_tokens,
        key_tokens,
        func="plot_attention_heads",
        title=title,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        cbar_label=cbar_label,
        col_titles=titles,
        row_labels=None,
        ncols=ncols,
    )


@_styled
def plot_attention_layers_heads(
    weights: Sequence[Any] | Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention weights by layer and head",
    *,
    cmap: str = SEQUENTIAL_CMAP,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    cbar_label: str = "attention weight",
) -> Figure:
    """Layers x heads grid of attention maps, one shared colour bar (chapter 11).

    Row ``l`` is layer ``l`` (0 = closest to the embeddings), column ``h`` is head
    ``h``. Inside each panel rows are queries and columns are keys.

    Args:
        weights: a list with one ``(H, Tq, Tk)`` (or ``(1, H, Tq, Tk)``) tensor per
            layer, e.g. ``attn["encoder"]`` from ``model(src, tgt,
            return_attention=True)`` with a batch of one; or one ``(N, H, Tq, Tk)``
            array.
        query_tokens, key_tokens: labels for rows and columns of every panel.
    """
    func = "plot_attention_layers_heads"
    if isinstance(weights, (list, tuple)):
        layers = [_squeeze_to(w, 3, "each layer's weights", func, "(H, Tq, Tk)") for w in weights]
        if not layers:
            raise ValueError(f"{func}: got an empty list of layers.")
        shapes = {w.shape for w in layers}
        if len(shapes) != 1:
            raise ValueError(f"{func}: every layer must have the same shape, got {sorted(shapes)}.")
        data = np.stack(layers)
    else:
        data = _squeeze_to(weights, 4, "weights", func, "(N, H, Tq, Tk)")
    n_layers, n_heads, tq, tk = data.shape
    titles = [f"head {idx}" if idx < n_heads else "" for idx in range(n_layers * n_heads)]
    return _heatmap_grid(
        data.reshape(n_layers * n_heads, tq, tk).astype(float),
        query_tokens,
        key_tokens,
        func=func,
        title=title,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        cbar_label=cbar_label,
        col_titles=titles,
        row_labels=[f"layer {layer}" for layer in range(n_layers)],
        ncols=n_heads,
    )


@_styled
def plot_head_importance(
    importance: Any,
    title: str = "What removing each head does",
    *,
    ax: Axes | None = None,
    cbar_label: str = "change in BLEU (points) without the head",
    cmap: str = DIVERGING_CMAP,
    annotate: bool = True,
    fmt: str = "+.1f",
    layer_labels: Sequence[str] | None = None,
) -> Figure:
    """Layers x heads heatmap of a signed score per head, e.g. BLEU change on ablation (ch. 11).

    Args:
        importance: ``(N, H)`` values; the diverging colour map is centred at 0.
        cbar_label: what the values are, with units.
        layer_labels: ``N`` row labels instead of the layer numbers, e.g. to stack the
            encoder, decoder and cross-attention layers of one model in one figure.
    """
    func = "plot_head_importance"
    data = _squeeze_to(importance, 2, "importance", func, "(N, H)").astype(float)
    n_layers, n_heads = data.shape
    if layer_labels is not None and len(layer_labels) != n_layers:
        raise ValueError(f"{func}: {len(layer_labels)} layer_labels for {n_layers} rows.")
    width = float(np.clip(0.7 * n_heads + 2.8, 4.5, 11)) + (1.6 if layer_labels else 0.0)
    fig, ax = _figure_and_axes(ax, (width, 0.6 * n_layers + 2))
    lim = _symmetric_limit(data)
    im = ax.imshow(data, cmap=cmap, vmin=-lim, vmax=lim, interpolation="nearest")
    ax.set_xticks(np.arange(n_heads))
    ax.set_yticks(np.arange(n_layers))
    if layer_labels is not None:
        ax.set_yticklabels([_label_text(label) for label in layer_labels])
    ax.set_xlabel("head")
    ax.set_ylabel("layer" if layer_labels is None else "attention, layer")
    ax.set_title(title)
    if annotate:
        _annotate_cells(ax, im, data, fmt, fontsize=9)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


# --- masks ----------------------------------------------------------------------------------------
_ATTEND_COLOUR = "#0072B2"  # dark blue: may attend
_BLOCKED_COLOUR = "#E8E8E8"  # light grey: blocked (also distinct in greyscale)


@_styled
def plot_mask(
    mask: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention mask",
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw a boolean attention mask: True = may attend (blue), False = blocked (grey) (ch. 6).

    Rows are queries, columns are keys, as in :func:`plot_attention`.

    Args:
        mask: ``(Tq, Tk)`` booleans (or 0/1). Leading size-1 axes are dropped, so
            ``causal_mask(T)`` of shape ``(1, 1, T, T)`` works directly. A padding
            mask with one row, ``(1, Tk)`` or ``(Tk,)``, is broadcast over the
            queries when ``query_tokens`` is given, as attention broadcasts it.
        query_tokens, key_tokens: labels for rows and columns.
    """
    func = "plot_mask"
    arr = _to_numpy(mask)
    while arr.ndim > 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim == 1:
        arr = arr[None, :]
    arr = _squeeze_to(arr, 2, "mask", func, "(Tq, Tk)") if arr.ndim != 2 else arr
    if arr.dtype != bool:
        values = np.unique(arr)
        if not np.isin(values, [0, 1]).all():
            raise ValueError(
                f"{func}: expected a boolean mask (True = may attend), got values "
                f"{values[:6].tolist()}. For an additive mask of 0 / -inf pass (mask == 0)."
            )
        arr = arr.astype(bool)
    if arr.shape[0] == 1 and query_tokens is not None and len(query_tokens) > 1:
        arr = np.broadcast_to(arr, (len(query_tokens), arr.shape[1]))
    tq, tk = arr.shape
    hint = _swap_hint(query_tokens, key_tokens, tq, tk)
    y_labels = _token_labels(query_tokens, tq, "query_tokens", func, hint)
    x_labels = _token_labels(key_tokens, tk, "key_tokens", func, hint)

    width = float(np.clip(0.42 * tk + 3.8, 5.0, 13.0))
    height = float(np.clip(0.42 * tq + 1.8, 2.6, 10.0))
    fig, ax = _figure_and_axes(ax, (width, height))
    cm = ListedColormap([_BLOCKED_COLOUR, _ATTEND_COLOUR])
    ax.imshow(arr.astype(int), cmap=cm, vmin=0, vmax=1, interpolation="nearest")
    # White grid lines between cells make single cells countable.
    ax.set_xticks(np.arange(-0.5, tk, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, tq, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fontsize = _tick_fontsize(max(tq, tk), 0.42 * max(tq, tk))
    _set_token_ticks(ax, x_labels, y_labels, fontsize)
    if x_labels is None or y_labels is None:
        _integer_ticks(ax)
    ax.set_xlabel(_KEY_LABEL if x_labels is not None else f"{_KEY_LABEL}, position")
    ax.set_ylabel(_QUERY_LABEL if y_labels is not None else f"{_QUERY_LABEL}, position")
    ax.set_title(title)
    handles = [
        Patch(facecolor=_ATTEND_COLOUR, edgecolor="#555555", label="True: may attend"),
        Patch(facecolor=_BLOCKED_COLOUR, edgecolor="#555555", label="False: blocked"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1.0), borderaxespad=0.0)
    return fig


# --- positions ------------------------------------------------------------------------------------
@_styled
def plot_positional_encoding(
    pe: Any,
    title: str = "Sinusoidal positional encoding",
    *,
    ax: Axes | None = None,
    cmap: str = DIVERGING_CMAP,
) -> Figure:
    """Heatmap of a positional-encoding table: x = embedding dimension, y = position (ch. 5).

    Sinusoidal values lie in ``[-1, 1]`` and the diverging colour map is fixed to
    that range (centred at 0); learned encodings with larger values get a
    symmetric range around 0 instead.

    Args:
        pe: ``(L, D)`` table (``(1, L, D)`` works too).
    """
    data = _squeeze_to(pe, 2, "pe", "plot_positional_encoding", "(L, D)").astype(float)
    lim = max(1.0, _symmetric_limit(data))
    fig, ax = _figure_and_axes(ax, (8.0, 4.6))
    im = ax.imshow(data, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    ax.set_xlabel("embedding dimension i")
    ax.set_ylabel("position in the sequence (pos)")
    ax.set_title(title)
    _integer_ticks(ax)
    fig.colorbar(im, ax=ax, label="encoding value PE(pos, i)")
    return fig


def _wavelength(dim: int, d_model: int, base: float) -> float:
    return 2 * math.pi * base ** (2 * (dim // 2) / d_model)


@_styled
def plot_sinusoids(
    pe: Any,
    dims: Sequence[int] | None = None,
    title: str = "Positional encoding: one sinusoid per dimension",
    *,
    ax: Axes | None = None,
    stacked: bool = True,
    base: float = 10000.0,
) -> Figure:
    """Value of ``pe[:, dim]`` against position for a few dimensions (chapter 5).

    Dimensions ``2i`` (sine, solid) and ``2i + 1`` (cosine, dashed) share a
    frequency and a colour; each is labelled with its wavelength
    ``2π · base^(2i/D)`` in positions (§3.5).

    Args:
        pe: ``(L, D)`` table.
        dims: dimensions to draw; default ``(0, 1, D/16, D/8, D/4)`` (rounded to even),
            whose wavelengths are about 6, 11, 20 and 63 positions.
        stacked: one row per dimension (each spanning -1 to 1), labelled on the y
            axis; ``False`` overlays the curves on one axis with a legend.
        base: the 10000 in the paper's formula, used only for the wavelength labels.
    """
    data = _squeeze_to(pe, 2, "pe", "plot_sinusoids", "(L, D)").astype(float)
    length, d_model = data.shape
    if dims is None:  # wavelengths 2π, ~11, ~20 and ~63 positions whatever D is
        fractions = [2 * (d_model // k) for k in (32, 16, 8)]
        dims = [d for d in (0, 1, *fractions) if d < d_model]
    dims = list(dict.fromkeys(int(d) for d in dims))
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"plot_sinusoids: dims {bad} outside 0..{d_model - 1} (pe is (L, D)).")
    height = 1.1 + 0.75 * len(dims) if stacked else 4.2
    fig, ax = _figure_and_axes(ax, (9.0, max(3.2, height)))
    freq_ids = list(dict.fromkeys(d // 2 for d in dims))
    positions = np.arange(length)
    gap = 2.6  # vertical distance between stacked rows; each row spans [-1, 1]
    offsets, tick_labels = [], []
    for row, d in enumerate(dims):
        colour = OKABE_ITO[freq_ids.index(d // 2) % len(OKABE_ITO)]
        kind = "sin" if d % 2 == 0 else "cos"
        label = f"dim {d} ({kind}), λ = {_wavelength(d, d_model, base):.3g}"
        offset = -row * gap if stacked else 0.0
        ax.plot(
            positions,
            data[:, d] + offset,
            color=colour,
            linestyle="-" if d % 2 == 0 else "--",
            marker="o" if length <= 60 else None,
            markersize=3,
            linewidth=1.8,
            label=label,
        )
        if stacked:
            ax.axhline(offset, color="#BBBBBB", linewidth=0.8, zorder=0)
            offsets.append(offset)
            tick_labels.append(label.replace(", ", "\n"))
    ax.set_xlabel("position in the sequence (pos)")
    ax.set_title(title)
    ax.set_xlim(0, length - 1)
    if stacked:
        ax.set_yticks(offsets)
        ax.set_yticklabels(tick_labels, fontsize=9.5)
        ax.set_ylim(offsets[-1] - 1.3, 1.3)
        ax.set_ylabel("PE(pos, dim); each row spans −1 to 1")
    else:
        ax.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        ax.set_ylim(-1.15, 1.15)
        ax.set_ylabel("encoding value PE(pos, dim)")
        ax.legend(
            title="dimension (wavelength in positions)",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
        )
    return fig


@_styled
def plot_position_similarity(
    pe: Any,
    show_distance: bool = True,
    title: str = "Similarity between positional encodings",
    *,
    ax: Axes | None = None,
    reference: int | None = None,
    cmap: str | None = None,
) -> Figure:
    """Dot products ``PE(p) · PE(q)`` between all positions, and against distance (ch. 5).

    Left: the ``(L, L)`` similarity matrix; rows and columns are positions.
    Non-negative similarities (as for sinusoids) use the sequential colour map,
    signed ones a diverging map centred at 0. Right (``show_distance=True``):
    the row of a reference position ``p`` against the offset ``k = q - p``. For
    sinusoids it depends only on ``k``, is symmetric, and shrinks as ``|k|``
    grows.

    Args:
        pe: ``(L, D)`` table.
        show_distance: add the similarity-against-offset panel.
        ax: draw only the matrix into this axes (``show_distance`` is ignored).
        reference: reference position ``p`` for the right panel (default ``L // 2``).
        cmap: colour map for the matrix (default: chosen as above).
    """
    func = "plot_position_similarity"
    data = _squeeze_to(pe, 2, "pe", func, "(L, D)").astype(float)
    length = data.shape[0]
    p = length // 2 if reference is None else int(reference)
    if not 0 <= p < length:
        raise ValueError(f"{func}: reference {p} outside 0..{length - 1}.")
    sim = data @ data.T  # (L, L)
    show_distance = show_distance and ax is None
    if show_distance:
        fig, (ax, ax_line) = _new_figure((11.0, 4.6), 1, 2, width_ratios=[1, 1.15])
    else:
        fig, ax = _figure_and_axes(ax, (6.0, 5.0))
    sequential = cmap is None and np.nanmin(sim) >= 0
    if sequential:
        im = ax.imshow(sim, cmap=SEQUENTIAL_CMAP, interpolation="nearest")
    else:
        lim = _symmetric_limit(sim)
        im = ax.imshow(
            sim, cmap=cmap or DIVERGING_CMAP, vmin=-lim, vmax=lim, interpolation="nearest"
        )
    ax.set_xlabel("position q")
    ax.set_ylabel("position p")
    _integer_ticks(ax)
    fig.colorbar(im, ax=ax, label="dot product", shrink=0.9)
    if show_distance:
        ax.set_title("PE(p) · PE(q) for all pairs")
        offsets = np.arange(length) - p
        ax_line.plot(offsets, sim[p], color=OKABE_ITO[0], linewidth=1.8)
        ax_line.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        ax_line.axvline(0, color="#999999", linewidth=0.8, linestyle=":", zorder=0)
        ax_line.set_xlabel(f"offset k = q − p (positions), p = {p}")
        ax_line.set_ylabel("dot product PE(p) · PE(p + k)")
        ax_line.set_title(f"Along row p = {p} (dashed line)")
        ax.axhline(p, color="white" if sequential else "black", linewidth=1.0, linestyle="--")
        fig.suptitle(title)
    else:
        ax.set_title(title)
    return fig


# --- training -------------------------------------------------------------------------------------
@_styled
def plot_lr_schedule(
    curves: Mapping[str, Any] | Any,
    lrs: Any | None = None,
    /,
    *,
    ax: Axes | None = None,
    title: str = "Learning-rate schedule",
    warmup_steps: int | Sequence[int] | None = None,
    log_y: bool = False,
    **named_curves: Any,
) -> Figure:
    """Learning rate against training step for one or more schedules (chapter 9).

    Three call forms::

        plot_lr_schedule(steps, lrs)                                   # one curve
        plot_lr_schedule(steps, base=lrs512, tiny=lrs128)              # labelled curves
        plot_lr_schedule({"d_model = 512": (steps, lrs512), "d_model = 128": (steps, lrs128)})

    In the dict form a value may also be just the learning rates, for steps
    ``1, 2, ...``. Everything after the curves is keyword-only.

    Args:
        warmup_steps: draw a dotted vertical line where warm-up ends (one or several).
        log_y: logarithmic learning-rate axis.
    """
    func = "plot_lr_schedule"
    series: list[tuple[str, np.ndarray, np.ndarray]] = []
    if isinstance(curves, Mapping):
        if named_curves or lrs is not None:
            raise ValueError(f"{func}: give the curves as one dict or as keywords, not both.")
        for label, value in curves.items():
            if isinstance(value, tuple) and len(value) == 2:
                x, y = (_to_numpy(v).astype(float).ravel() for v in value)
            else:
                y = _to_numpy(value).astype(float).ravel()
                x = np.arange(1, y.size + 1, dtype=float)
            series.append((str(label), x, y))
    else:
        if lrs is None and not named_curves:
            raise ValueError(
                f"{func}: pass plot_lr_schedule(steps, lrs), plot_lr_schedule(steps, label=lrs) "
                "or plot_lr_schedule({label: (steps, lrs)})."
            )
        x = _to_numpy(curves).astype(float).ravel()
        if lrs is not None:
            series.append(("", x, _to_numpy(lrs).astype(float).ravel()))
        for label, value in named_curves.items():
            series.append((label, x, _to_numpy(value).astype(float).ravel()))
    for label, x, y in series:
        if x.shape != y.shape:
            raise ValueError(
                f"{func}: curve {label!r} has {x.size} steps but {y.size} learning rates."
            )

    fig, ax = _figure_and_axes(ax, (7.5, 4.2))
    for label, x, y in series:
        ax.plot(x, y, linewidth=2, label=label or None)
    if warmup_steps is not None:
        ws = [warmup_steps] if np.isscalar(warmup_steps) else list(warmup_steps)
        for w in ws:
            ax.axvline(w, color="#666666", linestyle=":", linewidth=1.2)
            ax.annotate(
                f"warm-up ends\n(step {int(w):,})"
                if float(w).is_integer()
                else f"warm-up ends\n(step {w})",
                xy=(w, 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(4, 4),
                textcoords="offset points",
                ha="left",
                va="bottom",
                fontsize=9,
                color="#444444",
            )
    ax.set_xlabel("training step")
    ax.set_ylabel("learning rate")
    ax.set_title(title)
    if log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    if any(label for label, _, _ in series):
        ax.legend(loc="upper right")
    return fig


@_styled
def plot_label_smoothing(
    target_dist: Any,
    tokens: Sequence[Any] | None = None,
    epsilon: float | None = None,
    title: str | None = None,
    *,
    ax: Axes | None = None,
    target: int | None = None,
) -> Figure:
    """Bars of the one-hot target next to the label-smoothed target distribution (ch. 9).

    Label smoothing (§5.4) moves probability ``ε`` from the correct token to the
    others; the chart shows both distributions over the vocabulary.

    Args:
        target_dist: ``(V,)`` smoothed target distribution (sums to 1).
        tokens: ``V`` labels for the bars (default: token ids).
        epsilon: shown in the title.
        target: index of the correct token (default: the largest entry).
    """
    func = "plot_label_smoothing"
    dist = _squeeze_to(target_dist, 1, "target_dist", func, "(V,)").astype(float)
    total = float(dist.sum())
    if not math.isclose(total, 1.0, abs_tol=1e-3):
        raise ValueError(f"{func}: target_dist must sum to 1 (a distribution), got {total:.4f}.")
    vocab = dist.size
    labels = _token_labels(tokens, vocab, "tokens", func)
    target = int(np.argmax(dist)) if target is None else int(target)
    one_hot = np.zeros(vocab)
    one_hot[target] = 1.0

    fig, ax = _figure_and_axes(ax, (float(np.clip(0.55 * vocab + 3, 5.5, 13)), 4.2))
    x = np.arange(vocab)
    ax.bar(
        x - 0.2,
        one_hot,
        width=0.4,
        facecolor="white",
        edgecolor=OKABE_ITO[6],
        hatch="///",
        linewidth=1.0,
        label="one-hot target",
    )
    bars = ax.bar(x + 0.2, dist, width=0.4, color=OKABE_ITO[0], label="smoothed target")
    if vocab <= 16:
        ax.bar_label(bars, fmt="%.3g", fontsize=8, padding=2)
    if labels is not None:
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_xlabel("vocabulary token")
    else:
        _integer_ticks(ax)
        ax.set_xlabel("vocabulary token id")
    ax.set_ylabel("target probability")
    ax.set_ylim(0, 1.12)
    if title is None:
        title = "Label smoothing" + (f" (ε = {epsilon:g})" if epsilon is not None else "")
    ax.set_title(title)
    ax.legend(loc="upper right")
    return fig


_LOG_KEYS = {
    "step": ("step", "steps", "global_step"),
    "loss": ("loss", "train_loss"),
    "val_loss": ("val_loss", "valid_loss", "dev_loss", "validation_loss"),
    "lr": ("lr", "learning_rate"),
    "tokens_per_s": ("tokens_per_s", "tokens_per_sec", "tok_per_s", "tokens_per_second"),
}


def _log_columns(log: Any) -> dict[str, np.ndarray]:
    """A training log (list of dicts, or dict of lists) as float columns, NaN where missing."""
    if isinstance(log, Mapping):
        cols = {k: list(v) for k, v in log.items()}
        n = max((len(v) for v in cols.values()), default=0)
        cols = {k: v + [None] * (n - len(v)) for k, v in cols.items()}
    else:
        rows = list(log)
        keys = list(dict.fromkeys(k for row in rows for k in row))
        cols = {k: [row.get(k) for row in rows] for k in keys}
    out = {}
    for k, v in cols.items():
        try:
            out[k] = np.array([np.nan if x is None else float(x) for x in v], dtype=float)
        except (TypeError, ValueError):
            continue  # non-numeric columns (timestamps, notes) are not plotted
    return out


def _find(cols: dict[str, np.ndarray], kind: str) -> np.ndarray | None:
    for key in _LOG_KEYS[kind]:
        if key in cols and np.isfinite(cols[key]).any():
            return cols[key]
    return None


def _ema(x: np.ndarray, weight: float) -> np.ndarray:
    out = np.empty_like(x)
    acc = np.nan
    for i, v in enumerate(x):
        if np.isfinite(v):
            acc = v if not np.isfinite(acc) else weight * acc + (1 - weight) * v
        out[i] = acc
    return out


@_styled
def plot_training_log(
    log: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]],
    title: str = "Training progress",
    *,
    smooth: float = 0.0,
    show_throughput: bool = True,
) -> Figure:
    """Loss (train and validation), learning rate and throughput against step (chapter 9).

    Panels, sharing the x axis "training step": loss in nats per token, then
    learning rate if the log has one, then tokens per second if present.

    Args:
        log: a list of dicts (one per logging step) or a dict of lists. Recognised
            keys: ``step``, ``loss``/``train_loss``, ``val_loss``, ``lr``,
            ``tokens_per_s``. Entries may be missing or ``None`` (e.g. validation
            loss only every few steps).
        smooth: exponential-moving-average weight in ``[0, 1)`` for the training
            loss; the raw curve stays visible, faded.
        show_throughput: add the tokens-per-second panel when the log has it.
    """
    cols = _log_columns(log)
    loss, val = _find(cols, "loss"), _find(cols, "val_loss")
    if loss is None and val is None:
        raise ValueError(
            f"plot_training_log: no loss in the log; keys found: {sorted(cols)}. "
            "Expected 'loss' (or 'train_loss') and optionally 'val_loss'."
        )
    if not 0.0 <= smooth < 1.0:
        raise ValueError(f"plot_training_log: smooth must be in [0, 1), got {smooth}.")
    n = len(next(iter(cols.values())))
    steps = _find(cols, "step")
    if steps is None:
        steps = np.arange(1, n + 1, dtype=float)
    lr = _find(cols, "lr")
    tps = _find(cols, "tokens_per_s") if show_throughput else None
    extra = [c for c in (lr, tps) if c is not None]
    fig, axes = _new_figure(
        (8.0, 3.6 + 1.8 * len(extra)),
        1 + len(extra),
        1,
        sharex=True,
        squeeze=False,
        height_ratios=[2] + [1] * len(extra),
    )
    axes = axes[:, 0]
    ax = axes[0]
    if loss is not None:
        ok = np.isfinite(loss)
        if smooth > 0:
            ax.plot(steps[ok], loss[ok], color=OKABE_ITO[0], alpha=0.3, linewidth=1)
            ax.plot(
                steps[ok],
                _ema(loss[ok], smooth),
                color=OKABE_ITO[0],
                linewidth=2,
                label=f"training (EMA {smooth:g})",
            )
        else:
            ax.plot(steps[ok], loss[ok], color=OKABE_ITO[0], linewidth=1.8, label="training")
    if val is not None:
        ok = np.isfinite(val)
        ax.plot(
            steps[ok],
            val[ok],
            color=OKABE_ITO[1],
            marker="o",
            markersize=4,
            linewidth=1.8,
            label="validation",
        )
    ax.set_ylabel("loss (nats per token)")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    panel = 1
    if lr is not None:
        ok = np.isfinite(lr)
        axes[panel].plot(steps[ok], lr[ok], color=OKABE_ITO[2], linewidth=1.8)
        axes[panel].set_ylabel("learning rate")
        axes[panel].ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
        axes[panel].set_ylim(bottom=0)
        axes[panel].grid(alpha=0.3)
        panel += 1
    if tps is not None:
        ok = np.isfinite(tps)
        axes[panel].plot(steps[ok], tps[ok], color=OKABE_ITO[3], linewidth=1.8)
        axes[panel].set_ylabel("tokens per second")
        axes[panel].set_ylim(bottom=0)
        axes[panel].grid(alpha=0.3)
    axes[-1].set_xlabel("training step")
    fig.suptitle(title)
    return fig


# --- scaling (ch. 3) ------------------------------------------------------------------------------
_DEFAULT_DKS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _power_of_two_axis(ax: Axes, dks: np.ndarray) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(dks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


@_styled
def plot_dot_product_variance(
    dks: Sequence[int] | None = None,
    variances: Sequence[float] | None = None,
    scaled_variances: Sequence[float] | None = None,
    title: str = "Why scale by 1/√d_k: variance of the attention score",
    *,
    ax: Axes | None = None,
    n_samples: int = 2000,
    seed: int = 0,
) -> Figure:
    """Variance of ``q · k`` against ``d_k``, with and without the ``1/√d_k`` scale (ch. 3).

    For ``q, k`` with independent unit-variance entries, ``Var(q · k) = d_k``
    (§3.2.1, footnote 4); dividing by ``√d_k`` brings it back to 1. Both axes
    are logarithmic; dashed lines show the theory.

    Args:
        dks: key dimensions (default 1, 2, 4, ..., 1024).
        variances: measured ``Var(q · k)`` per ``d_k``; if omitted, estimated here
            from ``n_samples`` random Gaussian pairs.
        scaled_variances: measured ``Var(q · k / √d_k)``; default ``variances / d_k``.
    """
    dk = np.asarray(_DEFAULT_DKS if dks is None else _to_numpy(dks), dtype=float)
    if variances is None:
        rng = np.random.default_rng(seed)
        var = np.array(
            [
                np.var(np.einsum("nd,nd->n", *rng.standard_normal((2, n_samples, int(d)))))
                for d in dk
            ]
        )
    else:
        var = _to_numpy(variances).astype(float)
    scaled = var / dk if scaled_variances is None else _to_numpy(scaled_variances).astype(float)
    if not var.shape == scaled.shape == dk.shape:
        raise ValueError("plot_dot_product_variance: dks and variances must have the same length.")
    fig, ax = _figure_and_axes(ax, (7.5, 4.6))
    ax.plot(dk, dk, color="#888888", linestyle="--", linewidth=1.2, label="theory: Var = d_k")
    ax.plot(
        dk, np.ones_like(dk), color="#888888", linestyle=":", linewidth=1.4, label="theory: Var = 1"
    )
    ax.plot(dk, var, "o-", color=OKABE_ITO[1], linewidth=2, label="q · k (unscaled)")
    ax.plot(dk, scaled, "s-", color=OKABE_ITO[0], linewidth=2, label="q · k / √d_k (scaled)")
    _power_of_two_axis(ax, dk)
    ax.set_yscale("log")
    ax.set_xlabel("key dimension d_k")
    ax.set_ylabel("variance of the attention score")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    ax.legend(loc="upper left")
    return fig


@_styled
def plot_softmax_saturation(
    dks: Sequence[int] | None = None,
    max_weights: Sequence[float] | None = None,
    max_weights_scaled: Sequence[float] | None = None,
    title: str = "Unscaled scores saturate the softmax",
    *,
    ax: Axes | None = None,
    n_keys: int = 10,
    n_samples: int = 500,
    seed: int = 0,
) -> Figure:
    """Mean largest softmax weight against ``d_k``, unscaled vs scaled scores (chapter 3).

    With unscaled scores the largest weight approaches 1 as ``d_k`` grows: the
    softmax turns into a hard arg-max whose gradients vanish. With ``1/√d_k`` it
    stays put.

    Args:
        dks: key dimensions (default 1, 2, 4, ..., 1024).
        max_weights, max_weights_scaled: measured values per ``d_k``; if omitted
            they are estimated here from ``n_samples`` random queries, each over
            ``n_keys`` random keys with unit-Gaussian entries.
    """
    dk = np.asarray(_DEFAULT_DKS if dks is None else _to_numpy(dks), dtype=float)
    if max_weights is None or max_weights_scaled is None:
        rng = np.random.default_rng(seed)
        raw, scaled = [], []
        for d in dk.astype(int):
            q = rng.standard_normal((n_samples, 1, d))
            k = rng.standard_normal((n_samples, n_keys, d))
            scores = (q * k).sum(-1)  # (n_samples, n_keys)
            for s, out in ((scores, raw), (scores / math.sqrt(d), scaled)):
                p = np.exp(s - s.max(-1, keepdims=True))
                out.append(float((p.max(-1) / p.sum(-1)).mean()))
        computed = (np.array(raw), np.array(scaled))
    m_raw = computed[0] if max_weights is None else _to_numpy(max_weights).astype(float)
    m_scaled = (
        computed[1] if max_weights_scaled is None else _to_numpy(max_weights_scaled).astype(float)
    )
    fig, ax = _figure_and_axes(ax, (7.5, 4.6))
    ax.axhline(1.0, color="#888888", linestyle="--", linewidth=1.2, label="one-hot (arg-max)")
    ax.axhline(
        1 / n_keys, color="#888888", linestyle=":", linewidth=1.4, label=f"uniform (1/{n_keys})"
    )
    ax.plot(dk, m_raw, "o-", color=OKABE_ITO[1], linewidth=2, label="softmax(q · k)")
    ax.plot(dk, m_scaled, "s-", color=OKABE_ITO[0], linewidth=2, label="softmax(q · k / √d_k)")
    _power_of_two_axis(ax, dk)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("key dimension d_k")
    ax.set_ylabel(f"mean largest weight (of {n_keys} keys)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right")
    return fig


# --- embeddings (ch. 2) ---------------------------------------------------------------------------
@_styled
def plot_embedding_norms(
    embeddings: Any,
    pe: Any | None = None,
    title: str = "Vector lengths: token embeddings and positional encodings",
    *,
    ax: Axes | None = None,
    scale: float | None = None,
) -> Figure:
    """Euclidean norms of token embeddings, before and after ``× √d_model``, vs the PE (ch. 2).

    The encoder input is ``embedding · √d_model + PE`` (§3.4). Bars show the mean
    norm per vector with the range (min to max) as whiskers, so one sees whether
    the positional signal would drown out the token or the other way round.

    Args:
        embeddings: ``(V, D)`` embedding matrix (e.g. ``model.embedding.weight``)
            or any ``(N, D)`` batch of token vectors.
        pe: ``(L, D)`` positional encodings; default the paper's sinusoids for 100
            positions.
        scale: the multiplier, default ``√D``.
    """
    func = "plot_embedding_norms"
    emb = _squeeze_to(embeddings, 2, "embeddings", func, "(V, D)").astype(float)
    d_model = emb.shape[1]
    pos = _sinusoidal_pe(100, d_model) if pe is None else _squeeze_to(pe, 2, "pe", func, "(L, D)")
    if pos.shape[1] != d_model:
        raise ValueError(f"{func}: embeddings have D = {d_model} but pe has D = {pos.shape[1]}.")
    scale = math.sqrt(d_model) if scale is None else float(scale)
    groups = [
        ("token embedding", np.linalg.norm(emb, axis=1)),
        (f"token embedding\n× √d_model = {scale:.3g}", np.linalg.norm(emb, axis=1) * scale),
        ("positional\nencoding", np.linalg.norm(pos.astype(float), axis=1)),
    ]
    means = np.array([g[1].mean() for g in groups])
    lows = np.maximum(0.0, means - np.array([g[1].min() for g in groups]))
    highs = np.maximum(0.0, np.array([g[1].max() for g in groups]) - means)  # rounding
    fig, ax = _figure_and_axes(ax, (7.0, 4.6))
    x = np.arange(len(groups))
    bars = ax.bar(
        x,
        means,
        yerr=[lows, highs],
        capsize=6,
        color=[OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2]],
        edgecolor="black",
        linewidth=0.6,
        width=0.6,
    )
    ax.bar_label(
        bars,
        labels=[f"{m:.3g}" for m in means],
        label_type="center",
        color="white",
        fontweight="bold",
    )
    ax.set_xticks(x)
    ax.set_xticklabels([g[0] for g in groups])
    if means.max() / max(means.min(), 1e-12) > 20:
        ax.set_yscale("log")
    ax.set_ylabel("norm per vector (mean, min–max)")
    ax.set_xlabel(f"vectors of dimension d_model = {d_model}")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return fig


# --- architecture (ch. 1, 8) ----------------------------------------------------------------------
_ARCH_STYLE = {
    # kind: (face, edge). Light tints of the Okabe-Ito colours keep black text readable.
    "embedding": ("#EBC9DC", "#CC79A7"),
    "attention": ("#F5CF99", "#E69F00"),
    "addnorm": ("#F6F1A8", "#B8A800"),
    "ffn": ("#A9D8F4", "#2B8CC4"),
    "linear": ("#EBC9DC", "#CC79A7"),
    "softmax": ("#99D8C7", "#009E73"),
}


def _box(
    ax: Axes,
    xc: float,
    yc: float,
    w: float,
    h: float,
    text: str,
    kind: str,
    hatch: str | None = None,
) -> tuple[float, float]:
    face, edge = _ARCH_STYLE[kind]
    ax.add_patch(
        FancyBboxPatch(
            (xc - w / 2, yc - h / 2),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.18",
            facecolor=face,
            edgecolor=edge,
            linewidth=1.6,
            hatch=hatch,
            zorder=3,
        )
    )
    ax.text(
        xc,
        yc,
        text,
        ha="center",
        va="center",
        fontsize=10.5,
        zorder=4,
        bbox=dict(facecolor=face, edgecolor="none", pad=0.5) if hatch else None,
    )
    return yc - h / 2, yc + h / 2


def _path(ax: Axes, points: Sequence[tuple[float, float]], arrow: bool = True) -> None:
    """A polyline through ``points``; an arrowhead on the last segment if ``arrow``."""
    pts = list(points)
    if len(pts) > 2 or not arrow:
        xs, ys = zip(*(pts[:-1] if arrow else pts))
        ax.plot(xs, ys, color=_LINE, linewidth=1.4, solid_capstyle="round", zorder=2)
    if arrow:
        ax.annotate(
            "",
            xy=pts[-1],
            xytext=pts[-2],
            arrowprops=dict(
                arrowstyle="-|>", color=_LINE, lw=1.4, shrinkA=0, shrinkB=0, mutation_scale=12
            ),
            zorder=2,
        )


def _positional_glyph(ax: Axes, x: float, y: float, r: float = 0.32) -> None:
    ax.add_patch(Circle((x, y), r, facecolor="white", edgecolor=_LINE, linewidth=1.3, zorder=3))
    t = np.linspace(-1, 1, 50)
    ax.plot(
        x + 0.8 * r * t,
        y + 0.45 * r * np.sin(np.pi * t * 1.5),
        color=_LINE,
        linewidth=1.2,
        zorder=4,
    )


def _plus(ax: Axes, x: float, y: float, r: float = 0.26) -> None:
    ax.add_patch(Circle((x, y), r, facecolor="white", edgecolor=_LINE, linewidth=1.3, zorder=3))
    ax.plot([x - 0.6 * r, x + 0.6 * r], [y, y], color=_LINE, linewidth=1.3, zorder=4)
    ax.plot([x, x], [y - 0.6 * r, y + 0.6 * r], color=_LINE, linewidth=1.3, zorder=4)


@_styled
def plot_architecture(
    n_layers_label: str = "N×",
    ax: Axes | None = None,
    title: str = "The Transformer: encoder (left) and decoder (right)",
) -> Figure:
    """The Transformer's architecture diagram (the paper's Figure 1), drawn from patches.

    Encoder stack on the left, decoder stack on the right, each sub-layer
    colour-coded by type (embedding, attention, add & norm, feed-forward,
    linear, softmax), residual connections drawn around each sub-layer, and the
    encoder output feeding the decoder's cross-attention as keys and values.
    Opens chapter 1 and returns in chapter 8.

    Args:
        n_layers_label: label for the repeated layers, e.g. ``"N×"`` or ``"6×"``.
    """
    fig, ax = _figure_and_axes(ax, (8.6, 9.3))
    ax.set_xlim(-0.9, 16.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=13, pad=10)

    w, h_sub, h_an = 4.2, 1.05, 0.7
    xe, xd = 4.7, 11.7
    split = 0.7  # distance of the Q/K/V split line below an attention box
    qkv = (-1.0, 0.0, 1.0)  # x offsets of V, K, Q into an attention box
    cross_kv = (-1.4, -0.6)  # V, K of the cross-attention: left of the decoder's own stream

    def embed(xc: float, side: int, label: str, caption: str) -> float:
        ax.text(xc, 0.35, caption, ha="center", va="center", fontsize=11)
        _path(ax, [(xc, 0.95 if "\n" not in caption else 1.05), (xc, 1.6)])
        _box(ax, xc, 2.1, w, 1.0, label, "embedding")
        _path(ax, [(xc, 2.6), (xc, 3.24)])
        _plus(ax, xc, 3.5)
        gx = xc + side * 1.35
        _positional_glyph(ax, gx, 3.5)
        _path(ax, [(gx - side * 0.32, 3.5), (xc + side * 0.26, 3.5)])
        ax.text(
            gx + side * 0.5,
            3.5,
            "Positional\nEncoding",
            ha="left" if side > 0 else "right",
            va="center",
            fontsize=10.5,
        )
        return 3.76  # top of the ⊕

    def stack(xc: float, side: int, blocks: list[tuple[str, str, str | None]], y0: float):
        """Draw sub-layers from ``y0`` up; ``side`` = -1 puts residual paths on the left."""
        x_res = xc + side * (w / 2 + 0.45)
        y = y0
        tops = {}
        for idx, (kind, label, hatch) in enumerate(blocks):
            y_split = y + 0.5
            bottom = y_split + split
            _, top = _box(ax, xc, bottom + h_sub / 2, w, h_sub, label, kind, hatch)
            an_bottom = top + 0.45
            _box(ax, xc, an_bottom + h_an / 2, w, h_an, "Add & Norm", "addnorm")
            y_an = an_bottom + h_an / 2
            if kind == "attention" and hatch is None and idx > 0:  # cross-attention
                _path(ax, [(xc, y), (xc, y_split), (xc + qkv[2], y_split), (xc + qkv[2], bottom)])
                tops["cross"] = (bottom, y_split)
                ax.text(xc + qkv[2] + 0.1, bottom - 0.3, "Q", fontsize=9, style="italic")
            elif kind == "attention":
                _path(ax, [(xc, y), (xc, y_split)], arrow=False)
                _path(ax, [(xc + qkv[0], y_split), (xc + qkv[2], y_split)], arrow=False)
                for off, name in zip(qkv, "VKQ"):
                    _path(ax, [(xc + off, y_split), (xc + off, bottom)])
                    ax.text(xc + off + 0.1, bottom - 0.3, name, fontsize=9, style="italic")
            else:
                _path(ax, [(xc, y), (xc, bottom)])
            # residual: from below the sub-layer around it into Add & Norm
            _path(ax, [(xc, y_split), (x_res, y_split), (x_res, y_an), (xc + side * w / 2, y_an)])
            _path(ax, [(xc, top), (xc, an_bottom)])
            y = an_bottom + h_an
        return y, tops

    def frame(xc: float, y0: float, y1: float, side: int, name: str) -> None:
        pad = w / 2 + 0.8
        ax.add_patch(
            FancyBboxPatch(
                (xc - pad, y0),
                2 * pad,
                y1 - y0,
                boxstyle="round,pad=0,rounding_size=0.35",
                facecolor="#F2F2F2",
                edgecolor="#9A9A9A",
                linewidth=1.2,
                zorder=1,
            )
        )
        x_out = xc + side * (pad + 0.25)
        ha = "left" if side > 0 else "right"
        ax.text(
            x_out, (y0 + y1) / 2, n_layers_label, fontsize=15, fontweight="bold", ha=ha, va="center"
        )
        ax.text(x_out, y1, name, fontsize=12, fontweight="bold", ha=ha, va="top", color="#444444")

    # Encoder
    y_in = embed(xe, -1, "Input\nEmbedding", "Inputs")
    enc_blocks = [("attention", "Multi-Head\nAttention", None), ("ffn", "Feed\nForward", None)]
    stack_bottom = y_in + 0.25
    y_top_e, _ = stack(xe, -1, enc_blocks, y_in)
    frame(xe, stack_bottom, y_top_e + 0.35, -1, "Encoder")

    # Decoder
    y_in_d = embed(xd, +1, "Output\nEmbedding", "Outputs\n(shifted right)")
    dec_blocks = [
        ("attention", "Masked\nMulti-Head\nAttention", "////"),
        ("attention", "Multi-Head\nAttention", None),
        ("ffn", "Feed\nForward", None),
    ]
    y_top_d, tops = stack(xd, +1, dec_blocks, y_in_d)
    frame(xd, stack_bottom, y_top_d + 0.35, +1, "Decoder")

    # Encoder output -> keys and values of the decoder's cross-attention
    cross_bottom, cross_split = tops["cross"]
    y_kv = cross_split + 0.3  # above the decoder's split line, so the paths never cross
    x_mid = (xe + xd) / 2
    y_route = y_top_e + 0.9
    _path(
        ax,
        [
            (xe, y_top_e),
            (xe, y_route),
            (x_mid, y_route),
            (x_mid, y_kv),
            (xd + cross_kv[1], y_kv),
            (xd + cross_kv[1], cross_bottom),
        ],
    )
    _path(ax, [(xd + cross_kv[0], y_kv), (xd + cross_kv[0], cross_bottom)])
    for off, name in zip(cross_kv, "VK"):
        ax.text(xd + off + 0.1, cross_bottom - 0.3, name, fontsize=9, style="italic")
    ax.text(
        (xe + x_mid) / 2 + 0.3,
        y_route + 0.12,
        "encoder output",
        fontsize=9.5,
        ha="center",
        va="bottom",
        color="#444444",
    )

    # Output head
    y = y_top_d + 0.35
    _path(ax, [(xd, y_top_d), (xd, y + 0.5)])
    _, top = _box(ax, xd, y + 0.5 + 0.35, w, 0.7, "Linear", "linear")
    _path(ax, [(xd, top), (xd, top + 0.45)])
    _, top = _box(ax, xd, top + 0.45 + 0.35, w, 0.7, "Softmax", "softmax")
    _path(ax, [(xd, top), (xd, top + 0.5)])
    ax.text(xd, top + 0.85, "Output\nProbabilities", ha="center", va="center", fontsize=11)
    ax.set_ylim(-0.2, top + 1.6)
    return fig


# --- ch. 1 comparison -----------------------------------------------------------------------------
@_styled
def plot_recurrence_vs_attention(
    seq_lens: Sequence[int] | None = None,
    d_model: int = 512,
    title: str = "Self-attention vs recurrence and convolution (paper, Table 1)",
    *,
    kernel_size: int = 3,
    include_convolution: bool = True,
) -> Figure:
    """Per-layer cost against sequence length ``n`` for recurrent, convolutional and
    self-attention layers, after the paper's Table 1 (chapter 1).

    Three panels, log-log: sequential operations (what cannot run in parallel),
    maximum path length between any two positions (what long-range dependencies
    must travel), and operations per layer (``n·d²`` for recurrence vs ``n²·d``
    for self-attention; self-attention is cheaper while ``n < d``). Constants
    are dropped, as in the table's O-notation.

    Args:
        seq_lens: sequence lengths ``n`` (default 1 to 4096).
        d_model: representation size ``d``.
        kernel_size: ``k`` for the (dilated) convolution, path length ``log_k n``.
    """
    n = (
        np.unique(np.geomspace(1, 4096, 120).round())
        if seq_lens is None
        else _to_numpy(seq_lens).astype(float)
    )
    d = float(d_model)
    series = [
        ("recurrent", OKABE_ITO[1], "-", n, n, n * d**2),
        ("self-attention", OKABE_ITO[0], "-", np.ones_like(n), np.ones_like(n), n**2 * d),
    ]
    if include_convolution:
        path = np.maximum(1.0, np.ceil(np.log(np.maximum(n, 1)) / np.log(kernel_size) - 1e-9))
        series.append(
            (
                f"convolution (k = {kernel_size}, dilated)",
                OKABE_ITO[2],
                "--",
                np.ones_like(n),
                path,
                kernel_size * n * d**2,
            )
        )
    fig, axes = _new_figure((13.0, 4.4), 1, 3)
    panels = [
        ("Sequential operations", "operations that must run in order"),
        ("Maximum path length", "steps between two positions"),
        ("Operations per layer", "multiply-adds (order of)"),
    ]
    for col, (ax, (name, ylabel)) in enumerate(zip(axes, panels)):
        for label, colour, style, *values in series:
            ax.plot(n, values[col], color=colour, linestyle=style, linewidth=2.2, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("sequence length n (tokens)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="major")
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=8))
    axes[2].axvline(d, color="#666666", linestyle=":", linewidth=1.2)
    axes[2].annotate(
        f"n = d = {d_model}",
        xy=(d, 0.03),
        xycoords=("data", "axes fraction"),
        xytext=(-4, 0),
        textcoords="offset points",
        ha="right",
        fontsize=9,
        color="#444444",
    )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(series), frameon=False)
    fig.suptitle(title)
    return fig


# --- beam search (ch. 10) -------------------------------------------------------------------------
BeamSteps = Sequence[Sequence[tuple[Sequence[str], float]]]


@_styled
def plot_beam_search(
    steps: BeamSteps,
    best: Sequence[str] | None = None,
    title: str | None = None,
    *,
    ax: Axes | None = None,
    eos_token: str = "<eos>",
    root_label: str = "<bos>",
) -> Figure:
    """Draw the tree of hypotheses a beam search explored (chapter 10).

    Args:
        steps: one entry per decoding step; ``steps[t]`` lists the hypotheses kept
            after step ``t`` as ``(tokens, score)`` pairs, where ``tokens`` is the
            whole prefix generated so far (without the start token) and ``score``
            its cumulative log-probability. A finished hypothesis may be carried
            forward unchanged. For example::

                [[(["▁Tom"], -0.1), (["▁He"], -2.3)],
                 [(["▁Tom", "▁is"], -0.4), (["▁He", "▁is"], -2.9)],
                 [(["▁Tom", "▁is", "<eos>"], -0.6), (["▁Tom", "▁was"], -2.7)]]

        best: the hypothesis to highlight (default: best score in the last step).
        eos_token: marks finished hypotheses.
        root_label: label of the start node.

    Nodes show the token and the cumulative log-probability. Hypotheses that were
    kept at some step but never extended are drawn grey ("pruned").
    """
    if not steps or not any(steps):
        raise ValueError(
            "plot_beam_search: steps is empty; expected [[(tokens, score), ...], ...]."
        )
    score: dict[tuple[str, ...], float] = {(): 0.0}
    for hyps in steps:
        for tokens, s in hyps:
            prefix = tuple(str(t) for t in tokens)
            if not prefix:
                raise ValueError("plot_beam_search: a hypothesis has no tokens.")
            for i in range(1, len(prefix)):  # parents not listed explicitly
                score.setdefault(prefix[:i], float("nan"))
            score[prefix] = float(s)
    if best is None:
        last = [hyps for hyps in steps if hyps][-1]
        best_prefix = tuple(str(t) for t in max(last, key=lambda h: h[1])[0])
    else:
        best_prefix = tuple(str(t) for t in best)
    on_best = {best_prefix[:i] for i in range(len(best_prefix) + 1)}
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {p: [] for p in score}
    for p in score:
        if p:
            children[p[:-1]].append(p)
    for kids in children.values():
        kids.sort(key=lambda c: -np.nan_to_num(score[c], nan=-np.inf))

    # Tidy layout: leaves get consecutive rows in depth-first order, parents sit
    # at the mean of their children.
    ypos: dict[tuple[str, ...], float] = {}
    counter = [0]

    def place(p: tuple[str, ...]) -> float:
        if not children[p]:
            ypos[p] = -counter[0]
            counter[0] += 1
        else:
            ypos[p] = float(np.mean([place(c) for c in children[p]]))
        return ypos[p]

    place(())
    depth = max(len(p) for p in score)
    n_rows = counter[0]
    fig, ax = _figure_and_axes(ax, (1.45 * (depth + 1) + 3.2, 0.62 * n_rows + 1.8))
    for p, kids in children.items():
        for c in kids:
            strong = c in on_best
            ax.plot(
                [len(p), len(c)],
                [ypos[p], ypos[c]],
                color=OKABE_ITO[0] if strong else "#AAAAAA",
                linewidth=2.6 if strong else 1.2,
                zorder=1,
            )
    styles = {
        "best": dict(fc="#CCE3F0", ec=OKABE_ITO[0], lw=2.0, color="black"),
        "finished": dict(fc="#CCECE3", ec=OKABE_ITO[2], lw=1.4, color="black"),
        "kept": dict(fc="white", ec="#555555", lw=1.0, color="black"),
        "pruned": dict(fc="#F0F0F0", ec="#BBBBBB", lw=1.0, color="#777777"),
    }
    for p, y in ypos.items():
        if not p:
            kind, text = "best", _label_text(root_label)
        else:
            if p in on_best:
                kind = "best"
            elif p[-1] == eos_token:
                kind = "finished"
            elif not children[p]:
                kind = "pruned"
            else:
                kind = "kept"
            s = score[p]
            text = _label_text(p[-1]) + ("" if math.isnan(s) else f"\n{s:.2f}")
        st = styles[kind]
        ax.text(
            len(p),
            y,
            text,
            ha="center",
            va="center",
            fontsize=9.5,
            color=st["color"],
            zorder=3,
            bbox=dict(boxstyle="round,pad=0.35", fc=st["fc"], ec=st["ec"], lw=st["lw"]),
        )
    ax.set_xlim(-0.6, depth + 0.6)
    ax.set_ylim(-(n_rows - 1) - 0.7, 0.7)
    ax.set_xticks(range(depth + 1))
    ax.set_xticklabels(["start"] + [str(t) for t in range(1, depth + 1)])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("decoding step (tokens generated)")
    ax.set_ylabel("hypotheses (log-probability)")
    beam = max(len(h) for h in steps)
    ax.set_title(title if title is not None else f"Beam search, beam size {beam}")
    handles = [
        Patch(facecolor=styles[k]["fc"], edgecolor=styles[k]["ec"], label=lab)
        for k, lab in (
            ("best", "chosen output"),
            ("finished", f"finished ({eos_token})"),
            ("kept", "kept in the beam"),
            ("pruned", "pruned"),
        )
    ]
    handles.append(Line2D([], [], color=OKABE_ITO[0], linewidth=2.6, label="best path"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


# ---- chapter 1 helpers ----
_MARKERS = ("o", "s", "^", "D", "v", "P")


@_styled
def plot_curves(
    x: Any,
    series: Mapping[str, Any],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    logy: bool = False,
    ax: Axes | None = None,
) -> Figure:
    """Several measured curves over one x axis, one colour and marker each (chapters 1, 3).

    Args:
        x: ``(N,)`` positions on the x axis.
        series: ``{label: (N,) values}``, drawn in the Okabe-Ito order.
        xlabel, ylabel, title: axis labels and title (required: a figure without
            them does not say what it measures).
        logx, logy: logarithmic axes; an x axis of powers of two gets base-2 ticks.

    Example:
        >>> fig = plot_curves([1, 2, 4], {"a": [1, 2, 3]}, xlabel="n", ylabel="t",
        ...                   title="demo")  # doctest: +SKIP
    """
    xs = _to_numpy(x).astype(float)
    if xs.ndim != 1:
        raise ValueError(f"plot_curves: x must be 1-D, got shape {tuple(xs.shape)}.")
    if not series:
        raise ValueError("plot_curves: series is empty; pass {label: values}.")
    fig, ax = _figure_and_axes(ax, (7.5, 4.4))
    for idx, (label, values) in enumerate(series.items()):
        ys = _to_numpy(values).astype(float)
        if ys.shape != xs.shape:
            raise ValueError(
                f"plot_curves: series {label!r} has shape {tuple(ys.shape)}, x has "
                f"{tuple(xs.shape)}; give one value per x."
            )
        ax.plot(
            xs,
            ys,
            marker=_MARKERS[idx % len(_MARKERS)],
            markersize=4 if xs.size > 20 else 6,
            color=OKABE_ITO[idx % len(OKABE_ITO)],
            linewidth=2,
            label=str(label),
        )
    if logx:
        if np.all(xs > 0) and np.allclose(np.log2(xs), np.round(np.log2(xs))):
            _power_of_two_axis(ax, xs)
        else:
            ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    ax.legend()
    return fig


# ---- chapter 2 helpers ----
@_styled
def plot_length_histogram(
    lengths: Mapping[str, Any],
    *,
    unit: str = "tokens",
    title: str = "Sentence lengths",
    ax: Axes | None = None,
) -> Figure:
    """Side-by-side histograms of sentence lengths, one bar per integer length (chapter 2).

    Args:
        lengths: ``{name: lengths}``, e.g. ``{"English": [...], "German": [...]}``.
        unit: what is counted ("tokens", "words", "characters"), used in the x label.
        title: axes title.
    """
    if not lengths:
        raise ValueError("plot_length_histogram: lengths is empty; pass {name: lengths}.")
    arrays = {name: _to_numpy(v).astype(int).ravel() for name, v in lengths.items()}
    if any(a.size == 0 for a in arrays.values()):
        raise ValueError("plot_length_histogram: every entry needs at least one length.")
    lo = min(int(a.min()) for a in arrays.values())
    hi = max(int(a.max()) for a in arrays.values())
    edges = np.arange(lo, hi + 2) - 0.5  # one bin per integer length
    fig, ax = _figure_and_axes(ax, (7.5, 4.2))
    labels = [f"{name} (mean {a.mean():.1f})" for name, a in arrays.items()]
    ax.hist(
        list(arrays.values()),
        bins=edges,
        label=labels,
        color=list(OKABE_ITO[: len(arrays)]),
        edgecolor="white",
        linewidth=0.4,
    )
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.set_xlabel(f"sentence length ({unit})")
    ax.set_ylabel("number of sentences")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    return fig


# ---- chapter 5 and 7 helpers ----
@_styled
def plot_position_rotation(
    pe: Any,
    pairs: Sequence[int] | None = None,
    offset: int = 3,
    starts: Sequence[int] = (2, 9),
    title: str = "Each sin/cos pair turns around a circle as the position grows",
    *,
    base: float = 10000.0,
) -> Figure:
    """Each pair ``(PE(pos, 2i), PE(pos, 2i+1))`` drawn as a point on the unit circle (ch. 5).

    One panel per pair ``i``; points are coloured by position. Arrows from the origin
    to positions ``p`` and ``p + offset`` for each ``p`` in ``starts`` show that moving
    ``offset`` positions turns the point by the same angle ``ω_i · offset`` wherever
    it starts: ``PE(pos + k)`` is a rotation, a linear function, of ``PE(pos)`` (§3.5).

    Args:
        pe: ``(L, D)`` sinusoidal table (sine in even, cosine in odd dimensions).
        pairs: pair indices ``i`` (dimensions ``2i`` and ``2i + 1``); default three
            pairs with wavelengths of about 6, 20 and 63 positions.
        offset: the shift ``k`` drawn by the arrows.
        starts: the start positions ``p`` of the arrows.
        base: the 10000 of the formula, for the angle in the panel titles.
    """
    func = "plot_position_rotation"
    data = _squeeze_to(pe, 2, "pe", func, "(L, D)").astype(float)
    length, d_model = data.shape
    if pairs is None:
        pairs = [i for i in (0, d_model // 16, d_model // 8) if 2 * i + 1 < d_model]
    pairs = list(dict.fromkeys(int(i) for i in pairs))
    bad = [i for i in pairs if not 0 <= 2 * i + 1 < d_model]
    if bad:
        raise ValueError(f"{func}: pairs {bad} need dimensions beyond d_model={d_model}.")
    starts = [int(p) for p in starts]
    if any(not 0 <= p or p + offset >= length for p in starts):
        raise ValueError(f"{func}: every start p needs p + offset < L = {length}.")
    fig, axes = _new_figure((3.6 * len(pairs) + 1.4, 5.0), 1, len(pairs), squeeze=False)
    fig.set_layout_engine("compressed")  # square panels without gaps
    axes = axes[0]
    positions = np.arange(length)
    theta = np.linspace(0, 2 * np.pi, 200)
    arrow_colours = (OKABE_ITO[1], OKABE_ITO[6], OKABE_ITO[4], OKABE_ITO[0])
    for ax, i in zip(axes, pairs):
        x, y = data[:, 2 * i], data[:, 2 * i + 1]
        ax.plot(np.sin(theta), np.cos(theta), color="#BBBBBB", linewidth=0.8, zorder=0)
        sc = ax.scatter(
            x, y, c=positions, cmap=SEQUENTIAL_CMAP, s=22, zorder=2, vmin=0, vmax=length - 1
        )
        omega = base ** (-2 * i / d_model)
        for n, p in enumerate(starts):
            colour = arrow_colours[n % len(arrow_colours)]
            for q, style in ((p, "-"), (p + offset, "--")):
                ax.annotate(
                    "",
                    xy=(x[q], y[q]),
                    xytext=(0, 0),
                    arrowprops=dict(
                        arrowstyle="-|>",
                        color=colour,
                        lw=1.6,
                        linestyle=style,
                        shrinkA=0,
                        shrinkB=3,
                    ),
                    zorder=3,
                )
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_xlabel(f"PE(pos, {2 * i}) = sin")
        ax.set_ylabel(f"PE(pos, {2 * i + 1}) = cos")
        turn = math.degrees(omega * offset) % 360
        ax.set_title(
            f"pair i = {i}: ω = {omega:.3g} rad/position\n{offset} positions = turn by {turn:.1f}°",
            fontsize=10.5,
        )
    handles = []
    for n, p in enumerate(starts):
        colour = arrow_colours[n % len(arrow_colours)]
        handles.append(Line2D([], [], color=colour, lw=1.6, label=f"pos {p}"))
        handles.append(
            Line2D([], [], color=colour, lw=1.6, linestyle="--", label=f"pos {p + offset}")
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        frameon=False,
        title=f"arrows: a position and the one {offset} steps later",
    )
    fig.colorbar(sc, ax=list(axes), label="position pos", shrink=0.8)
    fig.suptitle(title)
    return fig


@_styled
def plot_layer_norm_effect(
    before: Any,
    after: Any,
    tokens: Sequence[Any] | None = None,
    title: str = "LayerNorm rescales every position's vector on its own",
) -> Figure:
    """The feature values of each position before and after LayerNorm (chapter 7).

    Two panels: each column is one position, its ``D`` feature values drawn as dots,
    with the mean (white diamond) and mean ± one standard deviation (bar). After
    LayerNorm (with its initial gain 1 and bias 0) every column has mean 0 and
    standard deviation 1, whatever it had before.

    Args:
        before, after: ``(L, D)`` vectors of ``L`` positions (a batch of one works too).
        tokens: ``L`` labels for the positions.
    """
    func = "plot_layer_norm_effect"
    panels = [
        _squeeze_to(before, 2, "before", func, "(L, D)").astype(float),
        _squeeze_to(after, 2, "after", func, "(L, D)").astype(float),
    ]
    if panels[0].shape != panels[1].shape:
        raise ValueError(
            f"{func}: before {panels[0].shape} and after {panels[1].shape} differ in shape."
        )
    length, d_model = panels[0].shape
    labels = _token_labels(tokens, length, "tokens", func)
    fig, axes = _new_figure((float(np.clip(1.1 * length + 2.5, 7.0, 13.0)), 4.4), 1, 2)
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.22, 0.22, size=d_model)
    names = ("before LayerNorm", "after LayerNorm")
    for ax, data, name in zip(axes, panels, names):
        for pos in range(length):
            ax.scatter(
                pos + jitter, data[pos], s=5, color=OKABE_ITO[0], alpha=0.35, linewidths=0, zorder=2
            )
            mean, std = data[pos].mean(), data[pos].std()
            ax.errorbar(pos, mean, yerr=std, color=OKABE_ITO[1], capsize=5, linewidth=2, zorder=3)
            ax.scatter(
                [pos],
                [mean],
                marker="D",
                s=36,
                color="white",
                edgecolors=OKABE_ITO[1],
                linewidths=1.5,
                zorder=4,
            )
        ax.axhline(0, color="#999999", linewidth=0.8, zorder=0)
        ax.set_title(name)
        ax.set_xticks(np.arange(length))
        if labels is not None:
            ax.set_xticklabels(labels, rotation=45, ha="right", rotation_mode="anchor")
            ax.set_xlabel("position (token)")
        else:
            ax.set_xlabel("position")
        ax.set_ylabel(f"feature value ({d_model} per position)")
        ax.grid(axis="y", alpha=0.3)
    handles = [
        Line2D(
            [], [], marker="o", linestyle="", color=OKABE_ITO[0], alpha=0.6, label="one feature"
        ),
        Line2D(
            [],
            [],
            marker="D",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor=OKABE_ITO[1],
            label="mean of the position",
        ),
        Line2D([], [], color=OKABE_ITO[1], linewidth=2, label="± one standard deviation"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(title)
    return fig


__all__ += ["plot_layer_norm_effect", "plot_position_rotation"]


# ---- chapter 11 helpers ----
@_styled
def plot_head_statistics(
    values: Any,
    head_labels: Sequence[str],
    stat_labels: Sequence[str],
    title: str = "What each head attends to",
    *,
    row_groups: Sequence[int] | None = None,
    cbar_label: str = "share of attention",
    vmin: float = 0.0,
    vmax: float = 1.0,
    fmt: str = ".2f",
    xlabel: str = "statistic (averaged over queries and sentences)",
    ylabel: str = "attention head",
    ax: Axes | None = None,
) -> Figure:
    """Heads x statistics heatmap with the value written in each cell (chapter 11).

    One row per head (e.g. "enc L0 h2"), one column per measured statistic (share of
    attention on the previous token, normalised entropy, ...). NaN cells (a statistic
    that does not apply, such as the next token under a causal mask) are grey and blank.

    Args:
        values: ``(R, C)`` numbers, by default in ``[0, 1]``.
        head_labels: ``R`` row labels; stat_labels: ``C`` column labels.
        row_groups: sizes of consecutive row groups (e.g. ``[8, 8, 2]`` for encoder heads,
            decoder heads and reference rows); a line is drawn between groups.
        vmin, vmax: colour range of the sequential (viridis) map.
    """
    func = "plot_head_statistics"
    data = _squeeze_to(values, 2, "values", func, "(R, C)").astype(float)
    n_rows, n_cols = data.shape
    rows = _token_labels(head_labels, n_rows, "head_labels", func)
    cols = _token_labels(stat_labels, n_cols, "stat_labels", func)
    if row_groups is not None and sum(row_groups) != n_rows:
        raise ValueError(f"{func}: row_groups {list(row_groups)} must add up to {n_rows} rows.")
    fig, ax = _figure_and_axes(
        ax,
        (
            float(np.clip(1.05 * n_cols + 4.0, 6.0, 12.0)),
            float(np.clip(0.34 * n_rows + 2.4, 3.0, 12)),
        ),
    )
    cm = mpl.colormaps[SEQUENTIAL_CMAP].with_extremes(bad="#DDDDDD")
    im = ax.imshow(np.ma.masked_invalid(data), cmap=cm, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(np.arange(n_cols))
    ax.set_xticklabels(cols, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_yticks(np.arange(n_rows))
    ax.set_yticklabels(rows)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _annotate_cells(ax, im, data, fmt, fontsize=8.5)
    if row_groups:
        for edge in np.cumsum(row_groups)[:-1]:
            ax.axhline(edge - 0.5, color="white", linewidth=3)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    return fig


@_styled
def plot_attention_alignment(
    weights: Any,
    query_tokens: Sequence[Any],
    key_tokens: Sequence[Any],
    alignment: Sequence[tuple[int, int]],
    title: str = "Cross-attention and the reference word alignment",
    *,
    cbar_label: str = "attention weight",
    ax: Axes | None = None,
) -> Figure:
    """One attention map with reference alignment cells outlined and each row's maximum
    marked (chapter 11).

    Rows are queries (target positions), columns keys (source tokens), as in
    :func:`plot_attention`. A head that aligns words puts each row's dot inside an
    outlined cell.

    Args:
        weights: ``(Tq, Tk)`` attention weights.
        alignment: ``(query index, key index)`` cells of the reference alignment.
    """
    func = "plot_attention_alignment"
    data = _squeeze_to(weights, 2, "weights", func, "(Tq, Tk)").astype(float)
    tq, tk = data.shape
    bad = [(i, j) for i, j in alignment if not (0 <= i < tq and 0 <= j < tk)]
    if bad:
        raise ValueError(f"{func}: alignment cells {bad[:4]} lie outside the {tq} x {tk} map.")
    own_figure = ax is None
    fig = plot_attention(data, query_tokens, key_tokens, ax=ax, title=title, cbar_label=cbar_label)
    ax = fig.axes[0] if own_figure else ax
    for i, j in alignment:
        ax.add_patch(
            Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=OKABE_ITO[1], linewidth=2.2)
        )
    best = np.nanargmax(np.nan_to_num(data, nan=-1.0), axis=1)
    ax.scatter(best, np.arange(tq), s=28, marker="o", color="white", edgecolors="black", zorder=3)
    handles = [
        Patch(facecolor="none", edgecolor=OKABE_ITO[1], linewidth=2, label="reference alignment"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor="black",
            label="largest weight in the row",
        ),
    ]
    if own_figure:  # below the axes and their labels, whatever the tick labels' length
        fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    else:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.3, 1.0), frameon=False)
    return fig


__all__ += ["plot_attention_alignment", "plot_head_statistics"]
