"""Where the parameters of a Transformer sit, for any configuration (chapter 8).

:func:`parameter_breakdown` counts the parameters of a
:class:`~transformer_lib.components.model.Transformer` part by part (the model is built on
PyTorch's ``meta`` device, so even the big model costs no memory; tied matrices are counted
once, as :func:`~transformer_lib.components.model.count_parameters` counts them).
:func:`parameter_explorer` draws the breakdown as bars with each part's share: live, six
knobs (``d_model``, heads, ``d_ff``, layers, vocabulary, sharing); precomputed for the book,
the paper's base model, the variants of its Table 3 rows A and C and a few more, each with
and without shared embeddings, all on one scale. Row B of Table 3 (``d_k`` changed alone) is
not among them: the library ties ``d_k`` to ``d_model / h``.
"""

from __future__ import annotations

from ..phone_layout import with_phone_png
from .frames import (
    LayoutMemo,
    book_style,
    figure_to_png,
    live_explorer,
    load_ipywidgets,
    new_figure,
    static_explorer,
    static_mode,
    use_static,
)

__all__ = ["TABLE3_PARAMS", "count_label", "parameter_breakdown", "parameter_explorer"]

#: Parameter counts (millions) that the paper's Table 3 lists, by row: every row the library
#: can build. Row B (58 M with d_k = 16, 60 M with d_k = 32) changes d_k alone, which the
#: library ties to d_model / h; chapter 8 counts those two by hand.
TABLE3_PARAMS = {
    "base": 65,
    "(C) N = 2": 36,
    "(C) N = 4": 50,
    "(C) N = 8": 80,
    "(C) d_model = 256": 28,
    "(C) d_model = 1024": 168,
    "(C) d_ff = 1024": 53,
    "(C) d_ff = 4096": 90,
    "big": 213,
}

# The paper's base model, and one change at a time: the rows of Table 3 that the library
# can build (row B changes d_k alone, which this library ties to d_model / h).
_BASE = {"d_model": 512, "n_heads": 8, "d_ff": 2048, "layers": 6, "vocab": 37000}
_VARIANTS = (
    ("base", {}),
    ("(A) h = 1", {"n_heads": 1}),
    ("(A) h = 4", {"n_heads": 4}),
    ("(A) h = 16", {"n_heads": 16}),
    ("(A) h = 32", {"n_heads": 32}),
    ("(C) N = 2", {"layers": 2}),
    ("(C) N = 4", {"layers": 4}),
    ("(C) N = 8", {"layers": 8}),
    ("(C) d_model = 256", {"d_model": 256}),
    ("(C) d_model = 1024", {"d_model": 1024}),
    ("(C) d_ff = 1024", {"d_ff": 1024}),
    ("(C) d_ff = 4096", {"d_ff": 4096}),
    ("vocabulary 8,000", {"vocab": 8000}),
    ("vocabulary 60,000", {"vocab": 60000}),
    ("big", {"d_model": 1024, "d_ff": 4096, "n_heads": 16}),
)

_SUBLAYERS = (
    (".self_attn.", "self-attention"),
    (".cross_attn.", "cross-attention"),
    (".ffn.", "feed-forward"),
)


def _part(name: str) -> str:
    """The part of the model a parameter name belongs to."""
    if name.startswith("positional"):  # before "embed": positional.embedding.weight
        return "learned positions"
    if "embed" in name or name == "generator.weight":
        return "embeddings and output matrix"
    if name == "generator.bias":
        return "output bias"
    stack = "encoder" if name.startswith("encoder") else "decoder"
    for key, label in _SUBLAYERS:
        if key in name:
            return f"{stack} {label}"
    return f"{stack} LayerNorms"  # the sub-layers' norms and, in pre-LN, the final one


def parameter_breakdown(config) -> dict[str, int]:
    """Parameters of ``Transformer(config)`` by part, in the order the model computes.

    Parts: the embeddings and output matrix (one matrix when ``share_embeddings``, else
    three), the output bias, learned positions (if any), then per stack its attention,
    feed-forward and LayerNorm parameters. Tied matrices are counted once, so the values
    add up to :func:`~transformer_lib.components.model.count_parameters`.

    Example:
        >>> from transformer_lib import TransformerConfig
        >>> parts = parameter_breakdown(TransformerConfig.base(37000))
        >>> round(parts["encoder feed-forward"] / 1e6, 1)
        12.6
    """
    import torch

    from ...components.model import Transformer

    with torch.device("meta"):  # shapes only: no memory, even for the big model
        model = Transformer(config)
    counts: dict[str, int] = {}
    for name, p in model.named_parameters():  # a tied tensor appears once
        counts[_part(name)] = counts.get(_part(name), 0) + p.numel()
    return counts


def count_label(count: int, total: int) -> str:
    """A part's parameter count in millions and its share of ``total``, in one format.

    Every count is in millions with two decimals (under 0.005 M: ``"<0.01 M"``); the share
    is a whole percent from 1% up, else one decimal (under 0.05%: ``"<0.1%"``). The bars of
    :func:`parameter_explorer` and chapter 8's breakdown table use it, so that no label
    mixes millions with exact counts.

    Example:
        >>> count_label(6_299_648, 63_119_496), count_label(12_288, 63_119_496)
        ('6.30 M (10%)', '0.01 M (<0.1%)')
    """
    millions = f"{count / 1e6:.2f} M" if count >= 5_000 else "<0.01 M"
    share = count / total
    if share >= 0.01:
        percent = f"{share:.0%}"
    elif share >= 0.0005:
        percent = f"{share:.1%}"
    else:
        percent = "<0.1%"
    return f"{millions} ({percent})"


def _describe_counts(config, name: str) -> str:
    """One frame in words: the total and the largest part."""
    parts = parameter_breakdown(config)
    largest = max(parts, key=parts.get)
    total = sum(parts.values())
    sharing = "shared" if config.share_embeddings else "separate"
    return (
        f"{name}, {sharing} embeddings: {total / 1e6:.1f} million parameters, the largest "
        f"part {largest} ({parts[largest] / total:.0%})"
    )


def _config(d_model: int, n_heads: int, d_ff: int, layers: int, vocab: int, shared: bool):
    from ...components.config import TransformerConfig

    return TransformerConfig(
        vocab_size=vocab,
        d_model=d_model,
        n_heads=n_heads,
        d_ff=d_ff,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        share_embeddings=shared,
    )


#: Width of a frame's phone version, in inches: 344 px at the frames' 80 dpi, shown at
#: full size in a phone's 350-pixel column.
_PHONE_WIDTH_IN = 4.3


def _breakdown_figure(
    config, label: str = "", xmax: float | None = None, narrow: bool = False, parts=None
):
    """The bars of one configuration; ``xmax`` (millions) fixes the scale, so that frames
    of an explorer can be compared by eye (default: fitted to this configuration).
    ``narrow``: the phone's version, :data:`_PHONE_WIDTH_IN` wide, the parts' names and
    the titles in two lines. ``parts``: :func:`parameter_breakdown` of ``config``, if
    counted already."""
    from ..style import OKABE_ITO

    parts = parameter_breakdown(config) if parts is None else parts
    total = sum(parts.values())
    names = list(parts)
    values = [parts[n] / 1e6 for n in names]
    colours = [
        OKABE_ITO[3]
        if n.startswith("embed") or n.startswith("output")
        else OKABE_ITO[0]
        if "attention" in n
        else OKABE_ITO[2]
        if "feed-forward" in n
        else "#888888"
        for n in names
    ]
    with book_style():
        fig = new_figure((_PHONE_WIDTH_IN, 5.6) if narrow else (9.0, 4.6), layout="constrained")
        ax = fig.subplots()
        bars = ax.barh(range(len(names)), values, color=colours)
        # narrow: "encoder feed-forward" in two lines, "embeddings and" over "output matrix"
        shown = [_two_lines(n) for n in names] if narrow else names
        ax.set_yticks(range(len(names)), shown)
        ax.invert_yaxis()  # the order the model computes, top to bottom
        for bar, n in zip(bars, names):
            ax.annotate(
                count_label(parts[n], total),
                xy=(bar.get_width(), bar.get_y() + bar.get_height() / 2),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=10,
            )
        # narrow: more room right of the bars, whose labels keep their size
        ax.set_xlim(0, (max(values) * 1.45 if xmax is None else xmax) * (1.25 if narrow else 1))
        ax.set_xlabel(
            "parameters in millions, M\n(share of the total)"
            if narrow
            else "parameters in millions, M (share of the total)"
        )
        ax.grid(axis="x", alpha=0.3)
        c = config
        shared = "shared" if c.share_embeddings else "not shared"
        ax.set_title(
            f"d_model {c.d_model}, h {c.n_heads} (d_k {c.d_head}), d_ff {c.d_ff},"
            + ("\n" if narrow else " ")
            + f"N {c.n_encoder_layers}, V {c.vocab_size:,}, embeddings {shared}",
            fontsize=11,
        )
        paper = TABLE3_PARAMS.get(label)
        if paper is not None and c.share_embeddings:
            note = f"; Table 3 lists {paper} M"
        elif label.startswith("(A)") and c.share_embeddings:
            note = "; Table 3 lists no count: the same as base"
        else:
            note = ""
        heading = f"{label}: " if label else ""
        if narrow:
            note = note.replace("; ", "\n", 1)
        fig.suptitle(f"{heading}{total / 1e6:,.1f} M parameters{note}")
    return fig


def _two_lines(name: str) -> str:
    """A part's name broken before its last word, or after "encoder" / "decoder"."""
    if name.startswith(("encoder ", "decoder ")):
        return name.replace(" ", "\n", 1)
    head, _, last = name.rpartition(" ")
    if name.endswith(" matrix"):
        head, _, tail = name.rpartition(" output")
        return f"{head}\noutput{tail}"
    return name if not head or len(name) <= 12 else f"{head}\n{last}"


def _frame(config, label: str, xmax: float, layouts: dict) -> bytes:
    """A precomputed frame; in the static build it carries the narrow drawing as its phone
    version (one panel: ``phone_layout`` has nothing to stack). The narrow drawings whose
    titles have as many lines share the first one's constrained layout (``layouts``): the
    same axis, ticks and labels on every frame."""
    parts = parameter_breakdown(config)
    png = figure_to_png(_breakdown_figure(config, label, xmax, parts=parts), phone=False)
    if not static_mode():
        return png
    narrow = _breakdown_figure(config, label, xmax, narrow=True, parts=parts)
    return with_phone_png(png, _laid_out(narrow, layouts))


def _laid_out(fig, layouts: dict) -> bytes:
    axes = fig.get_axes()
    key = fig._suptitle.get_text().count("\n")
    known = layouts.get(key)
    if known is not None:
        fig.set_layout_engine("none")
        for ax, position in zip(axes, known):
            ax.set_position(position)
    png = figure_to_png(fig, phone=False)
    if known is None:
        layouts[key] = [ax.get_position() for ax in axes]
    return png


def parameter_explorer(*, static: bool | None = None):
    """The parameter count of a Transformer, part by part, and each part's share.

    Chapter 8 (Table 3). Live: six knobs, ``d_model``, heads, ``d_ff``, layers ``N`` (for
    both stacks), vocabulary size and weight sharing; every redraw counts the parameters
    of the configuration with :func:`parameter_breakdown`. Static (the book): the base
    model and one change at a time (Table 3 rows A and C, two vocabulary sizes, the big
    model), each with shared and with separate embeddings: 30 precomputed frames, all with
    the same x axis (the largest part of any frame, plus room for its label).
    """
    widgets = load_ipywidgets()
    title = "How many parameters, and where?"
    if use_static(static):
        change = widgets.SelectionSlider(
            options=[name for name, _ in _VARIANTS],
            index=0,
            description="model",
            tooltip="which model's parameters are counted",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        sharing = widgets.ToggleButtons(
            options=["shared", "not shared"],
            index=0,
            description="embeddings",
            tooltip="input and output embeddings shared or separate",
            style={"button_width": "90px"},
        )
        configs = [
            [(_config(**{**_BASE, **changes}, shared=s), name) for s in (True, False)]
            for name, changes in _VARIANTS
        ]
        # One scale for every frame: the largest part of any configuration, plus room for
        # its label (as _breakdown_figure leaves it for a single configuration).
        xmax = 1.3 * max(
            max(parameter_breakdown(c).values()) / 1e6 for row in configs for c, _ in row
        )
        layouts: dict = {}
        frames = [[_frame(c, name, xmax, layouts) for c, name in row] for row in configs]
        return static_explorer(
            title,
            "Slide from the paper's base model through one change at a time (the variants "
            "of Table 3's rows A and C, two vocabulary sizes, the big model; row B changes "
            "d_k alone, which this library cannot build); switch weight sharing. Every "
            "frame has the same scale.",
            [change, sharing],
            {"model": change, "sharing": sharing},
            [change, sharing],
            frames,
            note="Precomputed; in a live notebook every knob can be set freely.",
            alt="Horizontal bars of the parameter count of each part of the model "
            "(embeddings, attention, feed-forward, layer norms, output) in millions, with "
            "each part's share of the total, for the chosen configuration.",
            describe=lambda i, j: _describe_counts(*configs[i][j]),
        )
    d_model = widgets.Dropdown(options=[128, 256, 512, 768, 1024], value=512, description="d_model")
    heads = widgets.Dropdown(options=[1, 2, 4, 8, 16, 32], value=8, description="heads")
    d_ff = widgets.Dropdown(options=[512, 1024, 2048, 4096, 8192], value=2048, description="d_ff")
    layers = widgets.IntSlider(value=6, min=1, max=12, description="layers N")
    vocab = widgets.Dropdown(
        options=[4000, 8000, 16000, 32000, 37000, 50000], value=37000, description="vocabulary"
    )
    sharing = widgets.ToggleButtons(
        options=["shared", "not shared"],
        description="embeddings",
        tooltip="input and output embeddings shared or separate",
    )
    memo = LayoutMemo()

    def draw() -> tuple[bytes, str]:
        from .frames import InputProblem

        if d_model.value % heads.value:
            raise InputProblem(f"d_model = {d_model.value} is not divisible by h = {heads.value}")
        config = _config(
            d_model.value,
            heads.value,
            d_ff.value,
            layers.value,
            vocab.value,
            sharing.index == 0,
        )
        return memo.png(_breakdown_figure(config), key="parameters"), ""

    controls = {
        "d_model": d_model,
        "heads": heads,
        "d_ff": d_ff,
        "layers": layers,
        "vocab": vocab,
        "sharing": sharing,
    }
    rows = [widgets.HBox([d_model, heads, d_ff]), widgets.HBox([layers, vocab]), sharing]
    return live_explorer(
        title,
        "Change the configuration; the bars count every parameter of that model.",
        rows,
        controls,
        draw,
        list(controls.values()),
    )
