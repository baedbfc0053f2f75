"""Small conveniences for the book's chapter notebooks."""

from __future__ import annotations

import functools
import inspect
import random
import re
import textwrap
from pathlib import Path

from .text_size import record_inline_figures

#: Characters of code that fit across the book's text column at full size, 13 px
#: (``_static/book.css``), in a 1280-pixel window; longer listings are drawn smaller,
#: down to :data:`_SMALLEST_SCALE`.
_CODE_PX = 13
_COLUMN_CHARS = 80
_SMALLEST_SCALE = 0.86


# The fold under an excerpt (``show_source(..., fold_whole=True)``): a native
# <details>/<summary>, so it opens by click, Enter or Space with no script, in the built
# book, Colab and Jupyter alike. The label says what is inside and turns into "Hide ..."
# while open; colours come from the page, so it reads in light and dark themes.
_TITLE_CSS = ".library-source-title{margin:.3em 0 .1em;font-size:.85em}"
_FOLD_CSS = (
    ".source-fold{margin:.25em 0 .75em}"
    ".source-fold>summary{cursor:pointer;display:list-item;padding:.3em .6em;"
    "border-left:3px solid rgba(128,128,128,.6);background:rgba(128,128,128,.08);"
    "font-weight:600;overflow-wrap:anywhere}"
    ".source-fold>summary:hover{background:rgba(128,128,128,.18)}"
    ".source-fold>summary code{color:inherit;background:rgba(128,128,128,.16)}"
    ".source-fold>summary:focus-visible{outline:3px solid #1f6feb;outline-offset:2px}"
    ".source-fold:not([open])>summary .source-fold-hide,"
    ".source-fold[open]>summary .source-fold-show{display:none}"
)


def _label_html(label: str) -> str:
    """A fold label as HTML: `` `name` `` becomes code, everything else is escaped."""
    import html as html_lib

    parts = label.split("`")
    if len(parts) % 2 == 0:
        raise ValueError(f"unclosed backtick in the fold label {label!r}")
    return "".join(
        f"<code>{html_lib.escape(p)}</code>" if i % 2 else html_lib.escape(p)
        for i, p in enumerate(parts)
    )


@functools.cache
def _source_listing_classes():
    from IPython.display import Code

    class SourceListing(Code):
        """Library source for a chapter page: fits the text column instead of scrolling.

        The plain-text form is the source itself. The HTML form is Pygments' highlighting
        with two changes for lines wider than the page: the listing is drawn up to 14%
        smaller, and a line that still does not fit wraps onto the next screen line,
        indented four characters deeper than the line itself (a hanging indent), so
        nothing is cut off or needs sideways scrolling. The source is not changed.
        """

        def _style(self) -> str:
            from pygments.formatters import HtmlFormatter

            return HtmlFormatter(nowrap=True).get_style_defs(".source-listing")

        def _listing_html(self, code: str) -> str:
            import html as html_lib

            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name

            formatter = HtmlFormatter(nowrap=True)
            lexer = get_lexer_by_name(self.language or "python", stripnl=False)
            source = code.splitlines()
            highlighted = highlight("\n".join(source), lexer, formatter).split("\n")
            if len(highlighted) < len(source):  # never expected; fall back to plain text
                highlighted = [html_lib.escape(line) for line in source]
            longest = max((len(line) for line in source), default=0)
            scale = min(1.0, max(_SMALLEST_SCALE, _COLUMN_CHARS / max(longest, 1)))
            rows = []
            for text, marked in zip(source, highlighted):
                hang = len(text) - len(text.lstrip(" ")) + 4
                rows.append(
                    f'<span style="display:block;padding-left:{hang}ch;'
                    f'text-indent:-{hang}ch">{marked or " "}</span>'
                )
            return (
                f'<div class="source-listing highlight">'
                f'<pre style="font-size:{_CODE_PX * scale:.1f}px;white-space:pre-wrap;'
                f'overflow-wrap:anywhere;line-height:125%">{"".join(rows)}</pre></div>'
            )

        #: Where the listing comes from ("From transformer_lib/x.py, lines 3-9"), or "".
        where = ""

        def _title_html(self) -> str:
            if not self.where:
                return ""
            return f'<p class="library-source-title">{_label_html(self.where)}</p>'

        def _repr_html_(self) -> str:
            return (
                f"<style>{self._style()}{_TITLE_CSS}</style>{self._title_html()}"
                f"{self._listing_html(self.data)}"
            )

    class FoldedSourceListing(SourceListing):
        """A listing with the whole source one click away, in a labelled fold.

        ``data`` (the plain-text form) is what the page shows unfolded: the excerpt, or
        the whole source when there is no excerpt. ``whole`` is the whole source and
        ``label`` the fold's label. In HTML the excerpt (if any) comes first, then a
        ``<details>`` whose ``<summary>`` is the label, holding the whole listing.
        """

        def __init__(self, data: str, *, whole: str, label: str, excerpt: bool):
            super().__init__(data, language="python")
            self.whole, self.label, self.excerpt = whole, label, excerpt

        def _repr_html_(self) -> str:
            hide = "Hide" + self.label[4:] if self.label.startswith("Show") else self.label
            # The line count is for the closed fold; the open one says "Hide ...".
            hide = re.sub(r" \(\d+ lines?\)$", "", hide)
            visible = self._listing_html(self.data) if self.excerpt else ""
            return (
                f"<style>{self._style()}{_FOLD_CSS}{_TITLE_CSS}</style>"
                f"{self._title_html()}{visible}"
                '<details class="source-fold"><summary>'
                f'<span class="source-fold-show">{_label_html(self.label)}</span>'
                f'<span class="source-fold-hide">{_label_html(hide)}</span>'
                f"</summary>{self._listing_html(self.whole)}</details>"
            )

    return SourceListing, FoldedSourceListing


def _find(lines: list[str], marker: str, obj, what: str) -> int:
    idx = next((i for i, line in enumerate(lines) if marker in line), None)
    if idx is None:
        raise ValueError(f"{what} {marker!r} does not occur in the source of {obj!r}")
    return idx


def show_source(
    obj,
    *,
    start: str | None = None,
    stop: str | None = None,
    lines: tuple[int, int] | None = None,
    fold_whole: bool = False,
    label: str | None = None,
):
    """Display the library's own source of ``obj`` (a function, class or method).

    The chapters teach the code that runs, not a copy of it: this renders it straight
    from ``transformer_lib``. A chapter can show only the key lines and keep the rest one
    click away: cut an excerpt with ``start``/``stop`` (marker strings) or ``lines`` (line
    numbers), and pass ``fold_whole=True`` to add the whole source below it, folded under
    a label that says what is inside ("Show the whole `batch_indices` source (41 lines)").
    Without an excerpt, ``fold_whole=True`` folds the whole listing ("Show the
    `Transformer` source (92 lines)"). The fold is part of the cell's output, so it works
    the same in the built book, Colab and Jupyter (a native ``<details>``: it opens by
    click, Enter or Space).

    Args:
        obj: a function, class or method of the library.
        start: the excerpt begins at the first line that contains this string.
        stop: the excerpt ends before the first line (from ``start`` on) that contains it.
        lines: ``(first, last)``, 1-based and inclusive, counted in the source of ``obj``
            (line 1 is its ``def``/``class`` line, or its first decorator); instead of
            ``start``/``stop``.
        fold_whole: also give the whole source, folded under a label.
        label: the fold's label instead of the default; `` `name` `` is shown as code.

    Returns:
        An ``IPython.display.Code`` whose ``data`` is the shown source (an excerpt is
        dedented). In HTML (the book's pages, Jupyter, Colab) long lines fit the text
        column: the listing is drawn slightly smaller when its longest line is over 80
        characters, and a line that still does not fit wraps with a hanging indent
        instead of being cut off.

    Raises:
        ValueError: a marker that does not occur, an empty excerpt, a line range outside
            the source, ``lines`` together with ``start``/``stop``, or ``label`` without
            ``fold_whole``.

    Example:
        >>> from transformer_lib.pipeline.batching import batch_indices
        >>> listing = show_source(batch_indices, lines=(1, 3), fold_whole=True)
        >>> listing.label.startswith("Show the whole `batch_indices` source")
        True
    """
    source = inspect.getsource(obj)
    all_lines = source.splitlines()
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
    if lines is not None:
        if start is not None or stop is not None:
            raise ValueError("give either lines=(first, last) or start/stop markers, not both")
        first, last = lines
        if not 1 <= first <= last <= len(all_lines):
            raise ValueError(
                f"lines={lines!r} is outside the source of {name} (lines 1 to "
                f"{len(all_lines)}): give (first, last) with 1 <= first <= last"
            )
        offset = first - 1
        shown = all_lines[offset:last]
    else:
        offset = 0 if start is None else _find(all_lines, start, obj, "start")
        shown = all_lines[offset:]
        if stop is not None:
            shown = shown[: _find(shown, stop, obj, "stop")]
            if not shown:
                raise ValueError(
                    f"the excerpt of {name} is empty: stop {stop!r} occurs on the start line"
                )
    code = textwrap.dedent("\n".join(shown))
    where = _where(obj, offset, len(shown))
    listing, folded = _source_listing_classes()
    if not fold_whole:
        if label is not None:
            raise ValueError("label names the fold: pass fold_whole=True with it")
        shown_listing = listing(code, language="python")
        shown_listing.where = where
        return shown_listing
    excerpt = len(shown) < len(all_lines)
    whole_code = textwrap.dedent("\n".join(all_lines))
    n = len(all_lines)
    if label is None:
        whole = "the whole " if excerpt else "the "
        label = f"Show {whole}`{name}` source ({n} line{'s' if n != 1 else ''})"
    elif not label.strip():
        raise ValueError("the fold's label is empty: say what is inside, or leave label out")
    _label_html(label)  # a malformed label fails here, not at display time
    folded_listing = folded(
        code if excerpt else whole_code,
        whole=whole_code,
        label=label,
        excerpt=excerpt,
    )
    folded_listing.where = where
    return folded_listing


def _where(obj, offset: int, n_lines: int) -> str:
    """ "From `transformer_lib/…/file.py`, lines a–b" ("line a" for one): the file of the
    library that holds the ``n_lines`` shown from line ``offset`` (0-based) of the source of
    ``obj``, and their line numbers in that file ("" for code outside the library)."""
    try:
        # A decorated function (``@torch.no_grad()``) is its wrapper: name the file of the
        # function itself, as ``getsourcelines`` (which unwraps) shows it.
        path = Path(inspect.getsourcefile(inspect.unwrap(obj)) or "").resolve()
        first_line = inspect.getsourcelines(obj)[1]
        relative = path.relative_to(Path(__file__).resolve().parents[2])
    except (TypeError, OSError, ValueError):
        return ""
    a = first_line + offset
    b = a + n_lines - 1
    lines = f"line {a}" if a == b else f"lines {a}–{b}"
    return f"From `{relative.as_posix()}`, {lines}"


def setup_notebook(seed: int = 0, threads: int = 1):
    """Seed every random generator, choose CPU threads and a figure style; return the device.

    One CPU thread by default: the book's models are small, and on a machine whose cores
    are busy with other work, several threads of one job wait for each other and run many
    times slower than one (measured: 7 vs 184 training steps in 30 s on 2 loaded cores).
    Returns ``"cuda"`` when a GPU is present, else ``"cpu"``.
    """
    import matplotlib as mpl
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    mpl.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "figure.figsize": (7, 4),
            "axes.titlesize": 12,
            "axes.labelsize": 11,
        }
    )
    record_inline_figures()  # figures carry their smallest text size (browser test)
    return "cuda" if torch.cuda.is_available() else "cpu"


def _escape_markdown(text: str) -> str:
    special = "\\`*_[]<>|#$"
    return "".join("\\" + ch if ch in special else ch for ch in text)


def markdown_table(header, rows, *, escape: bool = True):
    """A small Markdown table for a chapter page.

    With ``escape=True`` cells show their text literally (subwords such as ``<unk>`` or
    ``▁Tom``); code spans in a cell (`` `x` ``) stay code spans, and the text around them is
    shown literally too (`` `bug`: attends to <pad> `` keeps its ``<pad>``).
    """
    import re

    from IPython.display import Markdown

    def cell(value) -> str:
        value = str(value)
        if not escape:
            return value
        parts = re.split(r"(`[^`]+`)", value)  # odd parts are code spans
        return "".join(p if i % 2 else _escape_markdown(p) for i, p in enumerate(parts))

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def exercise(check):
    """Mark a chapter's exercise check so that an exercise not yet attempted does not stop
    "Run all" (as in Colab).

    The reader's stub raises ``NotImplementedError`` until they write it. Wrapped with
    ``@exercise``, the check then prints that the exercise is not attempted yet and
    returns ``None``; a wrong answer still raises (an ``AssertionError`` that says what
    is wrong), and a right one returns what the check returns.

    Example:
        >>> @exercise
        ... def check_double(fn):
        ...     assert fn(2) == 4, "double(2) should be 4"
        ...     print("Correct!")
        >>> def double(x):
        ...     raise NotImplementedError
        >>> check_double(double)
        check_double: not attempted yet (the function still raises NotImplementedError).
    """
    import functools

    @functools.wraps(check)
    def run(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except NotImplementedError:
            print(
                f"{check.__name__}: not attempted yet (the function still raises "
                f"NotImplementedError)."
            )
            return None

    return run
