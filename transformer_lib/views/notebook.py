"""Small conveniences for the book's chapter notebooks."""

from __future__ import annotations

import inspect
import random
import textwrap


def show_source(obj, *, start: str | None = None, stop: str | None = None):
    """Display the library's own source of ``obj`` (a function, class or method).

    The chapters teach the code that runs, not a copy of it: this renders it straight
    from ``transformer_lib``. ``start``/``stop`` cut the listing at the first line
    containing those strings (``stop`` excluded); an excerpt is dedented.
    """
    from IPython.display import Code

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
    return Code(textwrap.dedent("\n".join(lines)), language="python")


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
