"""A small TeX-to-MathML converter for the inline math of the book's HTML widgets.

MathJax typesets the chapters' Markdown, but not HTML produced by code cells everywhere
(Colab's output frames have no MathJax), so widgets such as the self-check quizzes of
:mod:`.self_check` convert their ``$...$`` math to MathML here, in Python; browsers draw
MathML natively and screen readers read it. :func:`tex_to_mathml` handles the TeX the
chapters use (letters, digits, ``_`` and ``^``, ``\\frac``, ``\\sqrt``, ``\\text``,
Greek letters, common operators and relations) and raises ``ValueError`` naming any
command it cannot draw.
"""

from __future__ import annotations

import html
import re

__all__ = ["tex_to_mathml"]

_GREEK = {
    name: chr(code)
    for name, code in {
        "alpha": 0x3B1, "beta": 0x3B2, "gamma": 0x3B3, "delta": 0x3B4, "epsilon": 0x3F5,
        "varepsilon": 0x3B5, "zeta": 0x3B6, "eta": 0x3B7, "theta": 0x3B8, "iota": 0x3B9,
        "kappa": 0x3BA, "lambda": 0x3BB, "mu": 0x3BC, "nu": 0x3BD, "xi": 0x3BE, "pi": 0x3C0,
        "rho": 0x3C1, "sigma": 0x3C3, "tau": 0x3C4, "upsilon": 0x3C5, "phi": 0x3D5,
        "varphi": 0x3C6, "chi": 0x3C7, "psi": 0x3C8, "omega": 0x3C9,
    }.items()
}  # fmt: skip
_GREEK_UPPER = {
    "Gamma": "\u0393", "Delta": "\u0394", "Theta": "\u0398", "Lambda": "\u039b",
    "Xi": "\u039e", "Pi": "\u03a0", "Sigma": "\u03a3", "Phi": "\u03a6", "Psi": "\u03a8",
    "Omega": "\u03a9",
}  # fmt: skip
# Ordinary symbols (drawn as identifiers) and operators/relations.
_SYMBOLS_MI = {"infty": "\u221e", "top": "\u22a4", "ell": "\u2113", "emptyset": "\u2205",
               "partial": "\u2202", "nabla": "\u2207", "hbar": "\u210f"}  # fmt: skip
_SYMBOLS_MO = {
    "cdot": "\u22c5", "times": "\u00d7", "div": "\u00f7", "pm": "\u00b1", "mp": "\u2213",
    "le": "\u2264", "leq": "\u2264", "ge": "\u2265", "geq": "\u2265", "ne": "\u2260",
    "neq": "\u2260", "approx": "\u2248", "sim": "\u223c", "equiv": "\u2261",
    "propto": "\u221d", "ll": "\u226a", "gg": "\u226b", "to": "\u2192",
    "rightarrow": "\u2192", "leftarrow": "\u2190", "Rightarrow": "\u21d2",
    "mapsto": "\u21a6", "in": "\u2208", "notin": "\u2209", "subset": "\u2282",
    "subseteq": "\u2286", "cup": "\u222a", "cap": "\u2229", "sum": "\u2211",
    "prod": "\u220f", "int": "\u222b", "ldots": "\u2026", "dots": "\u2026",
    "cdots": "\u22ef", "mid": "\u2223", "lVert": "\u2016", "rVert": "\u2016",
    "|": "\u2016", "langle": "\u27e8", "rangle": "\u27e9", "lfloor": "\u230a",
    "rfloor": "\u230b", "lceil": "\u2308", "rceil": "\u2309", "odot": "\u2299",
    "oplus": "\u2295", "otimes": "\u2297", "circ": "\u2218", "forall": "\u2200",
    "exists": "\u2203", "neg": "\u00ac", "land": "\u2227", "lor": "\u2228",
    "ast": "\u2217", "star": "\u22c6", "{": "{", "}": "}", "%": "%", "#": "#", "&": "&",
    "_": "_", "$": "$",
}  # fmt: skip
_FUNCTIONS = {"log", "ln", "exp", "max", "min", "sin", "cos", "tan", "arg", "det", "dim",
              "lim", "sup", "inf", "tanh"}  # fmt: skip
_SPACES = {",": "0.1667em", ":": "0.2222em", ">": "0.2222em", ";": "0.2778em",
           " ": "0.25em", "quad": "1em", "qquad": "2em", "!": None}  # fmt: skip
_ACCENTS = {"hat": "\u02c6", "widehat": "\u02c6", "tilde": "\u02dc", "widetilde": "\u02dc",
            "bar": "\u00af", "overline": "\u00af", "vec": "\u2192", "dot": "\u02d9"}  # fmt: skip
_TEXT = {"text", "textrm", "mbox", "operatorname", "mathrm"}
_DOUBLE_STRUCK = {"R": "\u211d", "N": "\u2115", "Z": "\u2124", "Q": "\u211a", "C": "\u2102"}
_OPERATOR_CHARS = "+-=<>()[],;:!/|.?*'"
_TOKEN = re.compile(r"\\([A-Za-z]+|.)|(\d+(?:\.\d+)?)|(\s+)|(.)", re.DOTALL)


def _supported() -> str:
    names = sorted(
        set(_GREEK) | set(_GREEK_UPPER) | set(_SYMBOLS_MI) | set(_FUNCTIONS) | set(_ACCENTS)
        | _TEXT | {"frac", "sqrt", "mathbf", "mathbb", "left", "right", "quad", "qquad"}
        | {k for k in _SYMBOLS_MO if k.isalpha()}
    )  # fmt: skip
    return ", ".join("\\" + n for n in names)


class _TexParser:
    def __init__(self, tex: str):
        self.tex = tex
        # (command, number, char, start, end); spaces between tokens are not drawn, as in
        # TeX math, but \text{...} keeps its own (it is sliced from the source).
        self.tokens = [
            (m.group(1), m.group(2), m.group(4), m.start(), m.end())
            for m in _TOKEN.finditer(tex)
            if not m.group(3)
        ]
        self.pos = 0

    def error(self, message: str) -> ValueError:
        return ValueError(f"math ${self.tex}$: {message}")

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        token = self.peek()
        if token is None:
            raise self.error("ends too early (a group or argument is missing)")
        self.pos += 1
        return token

    def sequence(self, closing: bool) -> str:
        items = []
        while True:
            token = self.peek()
            if token is None:
                if closing:
                    raise self.error("a { is not closed by }")
                break
            if token[2] == "}":
                if not closing:
                    raise self.error("a } has no matching {")
                self.pos += 1
                break
            items.append(self.scripted())
        return "".join(items)

    def group_text(self, name: str) -> str:
        """The source text of a {...} argument (for \\text and friends)."""
        first = self.peek()
        if first is None or first[2] != "{":
            raise self.error(f"\\{name} needs its argument in braces: \\{name}{{...}}")
        self.pos += 1
        depth = 1
        while depth:
            token = self.take()
            depth += {"{": 1, "}": -1}.get(token[2] or "", 0)
        return self.tex[first[4] : token[3]]

    def argument(self) -> str:
        token = self.peek()
        if token is None:
            raise self.error("an argument is missing")
        if token[2] == "{":
            self.pos += 1
            return _row(self.sequence(closing=True))
        return self.atom()

    def scripted(self) -> str:
        """An atom with its sub- and superscripts (``x_i^2``, ``x'``)."""
        base = self.atom()
        sub, sup = None, []  # sup: primes and at most one ^ argument
        while True:
            token = self.peek()
            if token is None or token[2] not in ("_", "^", "'"):
                break
            self.pos += 1
            if token[2] == "'":
                sup.append("<mo>\u2032</mo>")
            elif token[2] == "_":
                if sub is not None:
                    raise self.error("two subscripts on one symbol: group them with braces")
                sub = self.argument()
            else:
                if any(not part.startswith("<mo>\u2032") for part in sup):
                    raise self.error("two superscripts on one symbol: group them with braces")
                sup.append(self.argument())
        upper = sup[0] if len(sup) == 1 else _row("".join(sup))
        if sub is not None and sup:
            return f"<msubsup>{base}{sub}{upper}</msubsup>"
        if sub is not None:
            return f"<msub>{base}{sub}</msub>"
        if sup:
            return f"<msup>{base}{upper}</msup>"
        return base

    def atom(self) -> str:
        command, number, char, _, _ = self.take()
        if number:
            return f"<mn>{number}</mn>"
        if command is not None:
            return self.command(command)
        if char == "{":
            return _row(self.sequence(closing=True))
        if char in "_^":
            raise self.error(f"{char} needs something before it (write {{}}{char}... for none)")
        if char == "}":
            raise self.error("a } has no matching {")
        if char in "&~#%":
            raise self.error(f"{char!r} is not supported in inline math")
        if char.isalpha():
            return f"<mi>{html.escape(char)}</mi>"
        symbol = {"-": "\u2212", "*": "\u2217", "'": "\u2032"}.get(char, char)
        if char in "()[]":
            return f'<mo stretchy="false">{html.escape(symbol)}</mo>'
        return f"<mo>{html.escape(symbol)}</mo>"

    def command(self, name: str) -> str:
        if name in _GREEK:
            return f"<mi>{_GREEK[name]}</mi>"
        if name in _GREEK_UPPER:
            return f'<mi mathvariant="normal">{_GREEK_UPPER[name]}</mi>'
        if name in _SYMBOLS_MI:
            return f'<mi mathvariant="normal">{_SYMBOLS_MI[name]}</mi>'
        if name in _SYMBOLS_MO:
            return f"<mo>{html.escape(_SYMBOLS_MO[name])}</mo>"
        if name in _FUNCTIONS:
            return f"<mi>{name}</mi><mo>\u2061</mo>"
        if name in _SPACES:
            width = _SPACES[name]
            return f'<mspace width="{width}"></mspace>' if width else ""
        if name == "frac":
            return f"<mfrac>{self.argument()}{self.argument()}</mfrac>"
        if name == "sqrt":
            token = self.peek()
            if token is not None and token[2] == "[":
                raise self.error("\\sqrt[n]{...} is not supported: write x^{1/n}")
            return f"<msqrt>{self.argument()}</msqrt>"
        if name in _TEXT:
            text = self.group_text(name)
            if name == "operatorname":
                return f"<mi>{html.escape(text)}</mi><mo>\u2061</mo>"
            if name == "mathrm":
                return f'<mi mathvariant="normal">{html.escape(text)}</mi>'
            return f"<mtext>{html.escape(text)}</mtext>"
        if name == "mathbf":
            return f"<mi>{_bold(self.group_text(name))}</mi>"
        if name == "mathbb":
            text = self.group_text(name)
            return f"<mi>{html.escape(''.join(_DOUBLE_STRUCK.get(ch, ch) for ch in text))}</mi>"
        if name in _ACCENTS:
            return f'<mover accent="true">{self.argument()}<mo>{_ACCENTS[name]}</mo></mover>'
        if name in ("left", "right"):
            command, _, char, _, _ = self.take()
            if char == ".":
                return ""
            if command is not None and command not in _SYMBOLS_MO:
                raise self.error(f"\\{name}\\{command} is not a delimiter")
            return f"<mo>{html.escape(_SYMBOLS_MO[command] if command else char)}</mo>"
        raise self.error(f"\\{name} is not supported in self-check math; supported: {_supported()}")


def _bold(text: str) -> str:
    """Latin letters and digits in Unicode's mathematical bold (MathML Core has no bold)."""
    out = []
    for ch in text:
        if "A" <= ch <= "Z":
            out.append(chr(0x1D400 + ord(ch) - ord("A")))
        elif "a" <= ch <= "z":
            out.append(chr(0x1D41A + ord(ch) - ord("a")))
        elif "0" <= ch <= "9":
            out.append(chr(0x1D7CE + ord(ch) - ord("0")))
        else:
            out.append(html.escape(ch))
    return "".join(out)


def _row(content: str) -> str:
    return f"<mrow>{content}</mrow>"


def tex_to_mathml(tex: str) -> str:
    """Inline MathML for a simple TeX formula (the subset listed in the module docstring).

    Args:
        tex: the formula without its ``$`` delimiters, e.g. ``\\sqrt{d_k}``.

    Returns:
        ``<math>...</math>``, drawn by the browser itself (no MathJax needed).

    Raises:
        ValueError: an unsupported command or unbalanced braces, naming the formula.

    Example:
        >>> tex_to_mathml("x^2")
        '<math><mrow><msup><mi>x</mi><mn>2</mn></msup></mrow></math>'
    """
    parser = _TexParser(tex)
    body = parser.sequence(closing=False)
    return f"<math>{_row(body)}</math>"
