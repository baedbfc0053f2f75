"""Vendored JavaScript for the book: fetch it from npm, and wire it into the Sphinx build.

The built book must work without a network: MathJax, the ipywidgets HTML manager,
require.js, d3 and jQuery are committed under ``_static/vendor/<package>/``, each with its
licence beside it. This one file knows that layout and is used in two ways.

1. As a script, to re-vendor (needs ``npm`` and access to the npm registry)::

       python scripts/vendor_js.py           # download the pinned versions below
       python scripts/vendor_js.py --only axe-core   # just one package (others kept)
       python scripts/vendor_js.py --check   # verify the committed files against MANIFEST.json

   Bump a version in ``PACKAGES``, run the script, rebuild the book (``make book``) and run
   the browser tests (``make test``). The script rewrites ``_static/vendor/`` completely.

2. As a Sphinx extension (``sphinx.local_extensions`` in ``_config.yml``), which

   * stops Jupyter Book from adding every vendored ``.js`` file to every page (it adds each
     ``.js``/``.css`` found under ``_static``); the vendored files are loaded only where
     they are needed (MathJax via ``mathjax_path``, the widget manager via
     ``nb_ipywidgets_js``, d3/jQuery inlined by ``transformer_lib.views.bertviz_views``);
   * does the same for the in-browser translator (``_static/live``): its script and
     stylesheet are added only to pages with a translator box (an element with the
     attribute ``data-live-translate``), and that script loads the heavy files
     (onnxruntime-web, the model) itself; those pages also get an empty favicon, so that
     no ``/favicon.ico`` request fails;
   * fixes names and roles that the theme and the bibliography get wrong for screen
     readers (hidden-cell toggles, bibliography entries), and lets a figure shrink to a
     narrow column only as far as its smallest text stays readable (its box scrolls
     beyond that), and shows a phone version of a wide figure (its panels in one column)
     on phones where the figure has one;
   * adds ``FontAwesomeConfig`` to every page, so the theme's FontAwesome nests its SVG
     inside ``<i>`` icons instead of replacing them (which otherwise breaks
     ``widgets.Play``);
   * on pages with widgets, tells require.js where the widget manager's modules live, so
     that its icon fonts are requested from the vendored folder instead of the page's, and
     maps the manager's MathJax 2 call (``MathJax.Hub.Queue``) onto MathJax 3;
   * sets ``TRANSFORMER_BOOK_STATIC=1`` (unless already set) for the notebook kernels the
     build starts, so ``transformer_lib.views.explorers`` builds its precomputed, kernel-free
     explorers;
   * leaves the test-only packages (axe-core, for the browser tests) out of the built book;
   * removes the sphinx-thebe configuration snippet, which Jupyter Book emits twice
     (``Identifier 'THEBE_JS_URL' has already been declared``); the book launches
     notebooks on Colab, not Thebe/Binder.

   Editing this file (or ``transformer_lib/views/explorers/frames.py``) makes the next build
   write every page again (their hash is the extension's ``env_version``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_static" / "vendor"
# Path of the vendored tree as seen from the HTML output's `_static/` folder.
VENDOR_URL = "vendor"

MIT_TEXT = """\
Permission is hereby granted, free of charge, to any person obtaining a copy of this
software and associated documentation files (the "Software"), to deal in the Software
without restriction, including without limitation the rights to use, copy, modify, merge,
publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR
PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE
FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
DEALINGS IN THE SOFTWARE.
"""


@dataclass
class Package:
    """One npm package and the files taken from it.

    ``files`` maps a path inside the tarball's ``package/`` folder (a file, or a folder
    ending in ``/``) to a path under ``_static/vendor/<name>/``. ``suffixes`` limits which
    files of a folder are copied.
    """

    name: str  # folder under _static/vendor/
    spec: str  # what `npm pack` is given
    files: dict[str, str]
    licence: str | None = "LICENSE"  # licence file inside the package, if it ships one
    suffixes: tuple[str, ...] = ()
    # Extra licence files from other packages: {file written: (npm spec, path in package)}.
    extra_licences: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Used when the package ships no licence file: (SPDX id, copyright line).
    licence_fallback: tuple[str, str] | None = None
    # Destination files stored gzip-compressed, as ``<name>.gz`` (large binaries).
    gzipped: tuple[str, ...] = ()
    # A tool for the tests only: never added to a page, and left out of the built book.
    test_only: bool = False


PACKAGES = [
    Package(
        name="mathjax",
        spec="mathjax@3.2.2",
        # Only the TeX-to-CommonHTML bundle, its web fonts and the TeX extensions that
        # the bundle's autoloader may request (\boldsymbol, \cancel, ...): about 2 MB of 24.
        files={
            "es5/tex-chtml.js": "tex-chtml.js",
            "es5/output/chtml/fonts/woff-v2/": "output/chtml/fonts/woff-v2/",
            "es5/input/tex/extensions/": "input/tex/extensions/",
        },
        suffixes=(".js", ".woff"),
    ),
    Package(
        name="html-manager",
        spec="@jupyter-widgets/html-manager@1.0.15",
        # `embed-amd.js` renders saved widget state in static HTML; it embeds the base,
        # controls and output widgets. Its CSS requests the FontAwesome 5 fonts by their
        # hashed names relative to the widget asset path; browsers take woff2 (woff as a
        # fallback), so the eot/ttf/svg copies are left out.
        files={"dist/embed-amd.js": "embed-amd.js", "dist/": "./"},
        suffixes=(".woff2", ".woff"),
        licence=None,  # ships none; the ipywidgets repository's BSD-3 licence is used
        extra_licences={
            "LICENSE": ("@jupyter-widgets/base@6.0.11", "LICENSE"),
            "LICENSE.fontawesome.txt": ("@fortawesome/fontawesome-free@5.15.4", "LICENSE.txt"),
            "THIRD-PARTY-NOTICES.txt": (
                "@jupyter-widgets/html-manager@1.0.15",
                "dist/embed.js.LICENSE.txt",
            ),
        },
    ),
    Package(
        name="requirejs",
        spec="requirejs@2.3.8",
        files={"require.js": "require.js"},
        licence=None,
        licence_fallback=("MIT", "Copyright jQuery Foundation and other contributors."),
    ),
    Package(
        name="d3",
        # bertviz asks for d3 5.7; 5.16 is the last release of that major version.
        spec="d3@5.16.0",
        files={"dist/d3.min.js": "d3.min.js"},
    ),
    Package(
        name="jquery",
        spec="jquery@3.7.1",
        files={"dist/jquery.min.js": "jquery.min.js"},
        licence="LICENSE.txt",
    ),
    Package(
        name="onnxruntime-web",
        spec="onnxruntime-web@1.30.0",
        # The in-browser translator (_static/live): the WebAssembly-only build, a plain
        # script defining `ort`, with the ES module that instantiates its binary. The
        # 14 MB binary is kept gzip-compressed (3.7 MB); the book build unpacks it into
        # the page's own loadable files (transformer_lib.pipeline.onnx_export).
        files={
            "dist/ort.wasm.min.js": "ort.wasm.min.js",
            "dist/ort-wasm-simd-threaded.mjs": "ort-wasm-simd-threaded.mjs",
            "dist/ort-wasm-simd-threaded.wasm": "ort-wasm-simd-threaded.wasm",
        },
        gzipped=("ort-wasm-simd-threaded.wasm",),
        licence=None,  # the package ships none; its package.json says MIT
        licence_fallback=("MIT", "Copyright (c) Microsoft Corporation. All rights reserved."),
    ),
    Package(
        name="tokenizers",
        # Tokenizes in the browser with the same tokenizer.json as Python's `tokenizers`.
        spec="@huggingface/tokenizers@0.2.0",
        files={"dist/tokenizers.min.cjs": "tokenizers.min.cjs"},
    ),
    Package(
        name="axe-core",
        # The accessibility checker of the browser tests (tests/browser/test_access.py),
        # which inject it into each page they open; the book's pages never load it.
        spec="axe-core@4.14.1",
        files={"axe.min.js": "axe.min.js", "LICENSE-3RD-PARTY.txt": "LICENSE-3RD-PARTY.txt"},
        test_only=True,
    ),
]

TEST_ONLY = [pkg.name for pkg in PACKAGES if pkg.test_only]


# --------------------------------------------------------------------------------------
# Vendoring (run as a script)
# --------------------------------------------------------------------------------------


def _npm_pack(spec: str, dest: Path) -> tuple[tarfile.TarFile, str]:
    """Download one package tarball with `npm pack`; return it opened, and its version."""
    out = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(dest)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tar = tarfile.open(dest / out.splitlines()[-1])
    meta = json.load(tar.extractfile("package/package.json"))
    return tar, meta["version"]


def _strip_source_map(data: bytes) -> bytes:
    # The maps are not vendored; a dangling `sourceMappingURL` makes browser dev tools
    # request them (404).
    lines = data.split(b"\n")
    return b"\n".join(line for line in lines if not line.startswith(b"//# sourceMappingURL="))


def vendor(packages: list[Package] = PACKAGES, only: list[str] | None = None) -> dict:
    """Download every package and rewrite ``_static/vendor``; return the manifest.

    ``only`` (package names) re-vendors just those packages: their folders and manifest
    entries are replaced, everything else is kept as it is.
    """
    if only:
        unknown = sorted(set(only) - {pkg.name for pkg in packages})
        if unknown:
            raise SystemExit(f"unknown package(s) {', '.join(unknown)}: see PACKAGES")
        packages = [pkg for pkg in packages if pkg.name in only]
    manifest: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        staged = tmp_path / "vendor"
        for pkg in packages:
            tar, version = _npm_pack(pkg.spec, tmp_path)
            out = staged / pkg.name
            members = {m.name[len("package/") :]: m for m in tar.getmembers() if m.isfile()}
            wanted: dict[str, str] = {}
            for src, dst in pkg.files.items():
                if src.endswith("/"):
                    for name in members:
                        if name.startswith(src) and name.endswith(pkg.suffixes or ("",)):
                            wanted[name] = dst + name[len(src) :]
                else:
                    wanted[src] = dst
            if pkg.licence:
                wanted[pkg.licence] = pkg.licence
            for src, dst in wanted.items():
                data = tar.extractfile(members[src]).read()
                if dst.endswith((".js", ".mjs", ".cjs")):
                    data = _strip_source_map(data)
                if dst in pkg.gzipped:
                    data = gzip.compress(data, compresslevel=9, mtime=0)
                    dst += ".gz"
                target = out / Path(dst)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            for dst, (spec, src) in pkg.extra_licences.items():
                other, _ = _npm_pack(spec, tmp_path)
                (out / dst).write_bytes(other.extractfile("package/" + src).read())
            if pkg.licence_fallback:
                spdx, line = pkg.licence_fallback
                (out / "LICENSE").write_text(f"{spdx} License\n\n{line}\n\n{MIT_TEXT}")
            manifest[pkg.name] = {"npm": f"{pkg.spec.rsplit('@', 1)[0]}@{version}"}
        for pkg_dir in sorted(staged.iterdir()):
            manifest[pkg_dir.name]["files"] = {
                p.relative_to(pkg_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(pkg_dir.rglob("*"))
                if p.is_file()
            }
        if only:
            kept = json.loads((VENDOR / "MANIFEST.json").read_text())
            order = [pkg.name for pkg in PACKAGES]
            merged = {**kept, **manifest}
            manifest = {name: merged[name] for name in sorted(merged, key=order.index)}
            for name in only:
                shutil.rmtree(VENDOR / name, ignore_errors=True)
                shutil.copytree(staged / name, VENDOR / name)
            (VENDOR / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
            return manifest
        (staged / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
        shutil.rmtree(VENDOR, ignore_errors=True)
        shutil.copytree(staged, VENDOR)
    return manifest


def check(vendor_dir: Path = VENDOR) -> list[str]:
    """Compare the vendored files with ``MANIFEST.json``; return a list of problems."""
    manifest_file = vendor_dir / "MANIFEST.json"
    if not manifest_file.exists():
        return [f"{manifest_file} is missing: run `python scripts/vendor_js.py`"]
    problems = []
    for name, entry in json.loads(manifest_file.read_text()).items():
        for rel, digest in entry["files"].items():
            path = vendor_dir / name / rel
            if not path.is_file():
                problems.append(f"missing: {path}")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"changed since vendoring: {path}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only verify the vendored files")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="re-vendor only these packages (folder names)"
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        print("\n".join(problems) or "vendored JavaScript matches MANIFEST.json")
        return 1 if problems else 0
    if shutil.which("npm") is None:
        print("npm is needed to re-vendor (apt-get install npm)", file=sys.stderr)
        return 1
    manifest = vendor(only=args.only)
    total = sum(p.stat().st_size for p in VENDOR.rglob("*") if p.is_file())
    for name, entry in manifest.items():
        print(f"{name:14s} {entry['npm']:40s} {len(entry['files']):3d} files")
    print(f"total {total / 1e6:.1f} MB in {VENDOR.relative_to(ROOT)}")
    return 0


# --------------------------------------------------------------------------------------
# Sphinx extension
# --------------------------------------------------------------------------------------

# Must run before the theme's (deferred) FontAwesome script: FontAwesome reads it on load.
FONTAWESOME_CONFIG = "window.FontAwesomeConfig = {autoReplaceSvg: 'nest'};"

# The widget manager resolves its icon-font URLs against the folder of its AMD modules,
# which require.js places, by default, beside the page: point those modules at the
# vendored folder. Inserted right after require.js on pages with widgets.
REQUIRE_SCRIPT = f"{VENDOR_URL}/requirejs/require.js"
WIDGETS_FOLDER = f"_static/{VENDOR_URL}/html-manager"


# The widget manager typesets widget labels with MathJax 2's `MathJax.Hub.Queue`; the book
# loads MathJax 3, where that call throws. Route it to MathJax 3 once MathJax has started.
# (Runs after Sphinx's `window.MathJax = {config}` and before the deferred MathJax script.)
MATHJAX2_SHIM = """(function () {
  var config = window.MathJax;
  if (!config) { return; }
  config.startup = config.startup || {};
  var ready = config.startup.ready;
  config.startup.ready = function () {
    if (ready) { ready(); } else { MathJax.startup.defaultReady(); }
    MathJax.Hub = {Queue: function (job) {
      var element = job && job[2];
      MathJax.startup.promise = MathJax.startup.promise.then(function () {
        return MathJax.typesetPromise(element ? [element] : undefined);
      });
    }};
  };
})();"""


def _require_config(root_relative: str) -> str:
    paths = {"@jupyter-widgets/html-manager/dist": root_relative, "@jupyter-widgets": root_relative}
    return f"require.config({{paths: {json.dumps(paths)}}});"


def _drop_vendored_assets(app, config) -> None:
    """Undo Jupyter Book's automatic inclusion of every vendored .js/.css on every page."""

    def keep(entry) -> bool:
        filename = str(entry[0] if isinstance(entry, (tuple, list)) else entry)
        return not filename.startswith((VENDOR_URL + "/", LIVE_URL + "/"))

    config.html_js_files = [e for e in config.html_js_files if keep(e)]
    config.html_css_files = [e for e in config.html_css_files if keep(e)]


# The in-browser translator (see transformer_lib/pipeline/onnx_export.py): its own script
# and stylesheet, relative to the HTML output's `_static/`, and the attribute that marks a
# translator box in a page.
LIVE_URL = "live"
LIVE_SCRIPT = f"{LIVE_URL}/live-translate.js"
LIVE_STYLE = f"{LIVE_URL}/live-translate.css"
LIVE_MARKER = "data-live-translate"
EMPTY_FAVICON = '<link rel="icon" href="data:,">'


def _adjust_page_scripts(app, pagename, templatename, context, doctree) -> None:
    """Per page: drop sphinx-thebe's duplicated snippet; configure require.js for widgets;
    add the in-browser translator where a page has one."""
    from sphinx.builders.html._assets import _CascadingStyleSheet, _JavaScript

    scripts = context.get("script_files")
    if scripts is None:
        return

    def body(script) -> str:
        return (getattr(script, "attributes", None) or {}).get("body", "") or ""

    def filename(script) -> str:
        return str(getattr(script, "filename", script) or "")

    # sphinx-thebe's inline `const THEBE_JS_URL = ...` is emitted twice (a SyntaxError in
    # the console); the book launches notebooks on Colab, so thebe is not used at all.
    scripts[:] = [
        s
        for s in scripts
        if "THEBE_JS_URL" not in body(s) and not filename(s).endswith("sphinx-thebe.js")
    ]
    for i, script in enumerate(scripts):
        if filename(script) == f"_static/{REQUIRE_SCRIPT}":
            folder = context["pathto"](WIDGETS_FOLDER, 1)
            setup = _require_config(folder) + "\n" + MATHJAX2_SHIM
            scripts.insert(i + 1, _JavaScript(None, body=setup, priority=script.priority))
            break
    if context.get("body"):
        context["body"] = _accessible_body(app, context["body"])
    if LIVE_MARKER in (context.get("body") or ""):
        # async: it starts loading the model before the page's deferred scripts have run.
        scripts.append(_JavaScript(f"_static/{LIVE_SCRIPT}", **{"async": "async"}))
        context.setdefault("css_files", []).append(_CascadingStyleSheet(f"_static/{LIVE_STYLE}"))
        context["metatags"] = (context.get("metatags") or "") + EMPTY_FAVICON


# myst-nb names the folds of hidden cells "Toggle hidden content" whatever they show
# ("Show code cell source", or the cell's own label): a screen reader should say what a
# sighted reader sees.
TOGGLE_NAME = ('<summary aria-label="Toggle hidden content">', "<summary>")
# The bibliography's entries use a role that ARIA 1.2 deprecates; in their list they are
# list items.
BIBLIOENTRY_ROLE = ('role="doc-biblioentry"', 'role="listitem"')
IMG_TAG = re.compile(r"<img\b[^>]*>")


def _accessible_body(app, body: str) -> str:
    """The page body with names and roles fixed and every figure kept readable."""
    body = body.replace(*TOGGLE_NAME).replace(*BIBLIOENTRY_ROLE)
    return IMG_TAG.sub(lambda m: _readable_image(app, m.group(0)), body)


def _readable_image(app, tag: str) -> str:
    """An ``<img>`` of a figure that may shrink to fit a narrow column only down to the
    width at which its smallest text is 9 CSS px; below that, its box scrolls sideways.

    The text size comes from the PNG itself (``transformer_lib.views.text_size``); an
    image with a size of its own (``style``/``width``) or without a record is left alone.
    A figure that carries a phone version (``transformer_lib.views.phone_layout``: its
    panels stacked in one column) becomes a ``<picture>`` that shows that version on
    screens up to :data:`PHONE_MEDIA_PX` wide; the phone PNG is written beside the
    desktop one (``<name>-phone.png``), and :func:`_strip_phone_versions` takes it out of
    the desktop PNG once the build has copied the images.
    """
    src = re.search(r'\ssrc="([^"]+\.png)"', tag)
    if not src or re.search(r"\s(style|width)=", tag):
        return tag
    sources = getattr(app.builder, "_readable_sources", None)
    if sources is None or len(sources) != len(app.builder.images):
        sources = {dest: source for source, dest in app.builder.images.items()}
        app.builder._readable_sources = sources
    name = src.group(1).rsplit("/", 1)[-1]
    source = sources.get(name)
    if source is None:
        return tag
    from transformer_lib.views.explorers.frames import readable_width
    from transformer_lib.views.phone_layout import phone_png

    png = Path(app.srcdir, source).read_bytes()
    width = readable_width(png)
    if width is None:
        return tag
    style = f"max-width: max(100%, {width}px)"
    phone = phone_png(png)
    if phone is None:
        return tag.replace("<img ", f'<img style="{style}" ', 1)
    # book.css: on a phone the image may shrink to the phone version's readable width.
    style += f"; --phone-readable: {readable_width(phone) or 0}px"
    tag = tag.replace("<img ", f'<img style="{style}" ', 1)
    phone_name = name[: -len(".png")] + PHONE_SUFFIX
    images = Path(app.builder.outdir, app.builder.imagedir)
    images.mkdir(parents=True, exist_ok=True)
    (images / phone_name).write_bytes(phone)
    phone_url = src.group(1)[: -len(name)] + phone_name
    return (
        f'<picture class="phone-figure"><source media="(max-width: {PHONE_MEDIA_PX}px)" '
        f'srcset="{phone_url}">{tag}</picture>'
    )


# A figure's phone version: the name it is written under, beside the desktop image, and
# the widest screen (CSS px) that shows it (as book.css's rule for it).
PHONE_SUFFIX = "-phone.png"
PHONE_MEDIA_PX = 600


def _strip_phone_versions(app, exception) -> None:
    """Take the phone versions out of the desktop PNGs copied into the book: each is a
    file of its own (``<name>-phone.png``), and browsers would download it twice."""
    if exception is not None or app.builder.format != "html":
        return
    from transformer_lib.views.phone_layout import strip_phone_png

    images = Path(app.outdir, app.builder.imagedir)
    for phone in images.glob("*" + PHONE_SUFFIX):
        desktop = phone.with_name(phone.name[: -len(PHONE_SUFFIX)] + ".png")
        if desktop.is_file():
            png = desktop.read_bytes()
            stripped = strip_phone_png(png)
            if stripped != png:
                desktop.write_bytes(stripped)


# Read by transformer_lib.views.explorers.static_mode() in the kernels that execute the chapters.
STATIC_ENV_VAR = "TRANSFORMER_BOOK_STATIC"


def _remove_test_tools(app, exception) -> None:
    """Leave the test-only packages (axe-core) out of the built book: no page uses them."""
    if exception is None and app.builder.format == "html":
        for name in TEST_ONLY:
            shutil.rmtree(Path(app.outdir) / "_static" / VENDOR_URL / name, ignore_errors=True)


def setup(app):
    os.environ.setdefault(STATIC_ENV_VAR, "1")
    app.connect("config-inited", _drop_vendored_assets, priority=900)
    app.connect("build-finished", _remove_test_tools)
    app.connect("build-finished", _strip_phone_versions)
    app.connect("html-page-context", _adjust_page_scripts, priority=900)
    app.add_js_file(None, body=FONTAWESOME_CONFIG, priority=100)
    # Pages embed these scripts, the figure widths computed with frames.readable_width and
    # the phone versions read by phone_layout: when one changes, every page is written again.
    views = ROOT / "transformer_lib" / "views"
    sources = [Path(__file__), views / "explorers" / "frames.py", views / "phone_layout.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources if p.is_file())).hexdigest()
    return {
        "env_version": int(digest[:8], 16),
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }


if __name__ == "__main__":
    sys.exit(main())
