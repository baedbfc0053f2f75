"""Small conveniences for the book's chapter notebooks."""

from __future__ import annotations

import inspect
import random
import textwrap

from .text_size import record_inline_figures

#: Characters of code that fit across the book's text column at full size, 13 px
#: (``_static/book.css``), in a 1280-pixel window; longer listings are drawn smaller,
#: down to :data:`_SMALLEST_SCALE`.
_CODE_PX = 13
_COLUMN_CHARS = 80
_SMALLEST_SCALE = 0.86


def _source_listing_class():
    from IPython.display import Code

    class SourceListing(Code):
        """Library source for a chapter page: fits the text column instead of scrolling.

        The plain-text form is the source itself. The HTML form is Pygments' highlighting
        with two changes for lines wider than the page: the listing is drawn up to 14%
        smaller, and a line that still does not fit wraps onto the next screen line,
        indented four characters deeper than the line itself (a hanging indent), so
        nothing is cut off or needs sideways scrolling. The source is not changed.
        """

        def _repr_html_(self) -> str:
            import html as html_lib

            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name

            formatter = HtmlFormatter(nowrap=True)
            lexer = get_lexer_by_name(self.language or "python", stripnl=False)
            source = self.data.splitlines()
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
            style = f"<style>{formatter.get_style_defs('.source-listing')}</style>"
            return (
                f'{style}<div class="source-listing highlight">'
                f'<pre style="font-size:{_CODE_PX * scale:.1f}px;white-space:pre-wrap;'
                f'overflow-wrap:anywhere;line-height:125%">{"".join(rows)}</pre></div>'
            )

    return SourceListing


def show_source(obj, *, start: str | None = None, stop: str | None = None):
    """Display the library's own source of ``obj`` (a function, class or method).

    The chapters teach the code that runs, not a copy of it: this renders it straight
    from ``transformer_lib``. ``start``/``stop`` cut the listing at the first line
    containing those strings (``stop`` excluded); an excerpt is dedented.

    Returns an ``IPython.display.Code`` whose ``data`` is the source. In HTML (the book's
    pages, Jupyter, Colab) long lines fit the text column: the listing is drawn slightly
    smaller when its longest line is over 76 characters, and a line that still does not
    fit wraps with a hanging indent instead of being cut off.
    """
    source = inspect.getsource(obj)
    lines = source.splitlines()
    if start is not None:
        idx = next((i for i, line in enumerate(lines) if start in line), None)
        if idx is None:
            raise ValueError(f"{start!r} does not occur in the source of {obj!r}")
        lines = lines[idx:]
    if stop is not None:
        idx = next((i for i, line in enumerate(lines) if stop in line), None)
        if idx is None:
            raise ValueError(f"{stop!r} does not occur in the source of {obj!r}")
        lines = lines[:idx]
    return _source_listing_class()(textwrap.dedent("\n".join(lines)), language="python")


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
    ``▁Tom``), except cells that are already code spans (start with a backtick).
    """
    from IPython.display import Markdown

    def cell(value) -> str:
        value = str(value)
        return value if not escape or value.startswith("`") else _escape_markdown(value)

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
