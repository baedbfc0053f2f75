# Two commands do all the set-up:  `make book`  and  `make test`.
PYTHON   ?= python3
VENV     := .venv
BIN      := $(VENV)/bin
STAMP    := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

.PHONY: venv live book test unit lint chromium vendor clean screenshots

venv: $(STAMP)

# --no-compile: pip would byte-compile every module of every package (torch alone has
# thousands) before the first command runs; Python compiles those it imports, once.
# That needs Python to write its bytecode caches, which PYTHONDONTWRITEBYTECODE (set in
# many container images) forbids: every process would compile again whatever it imports
# (torch and matplotlib alone: 4.7 s a process instead of 2.2). The commands below may
# write them, into .venv and the git-ignored __pycache__ folders.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-compile -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

# The in-browser translator's files (_static/live/generated, git-ignored): the shipped
# model exported to ONNX, with onnxruntime-web's WebAssembly and the tokenizer, as plain
# scripts. Written again only when the checkpoint, the exporter or the model code changed.
LIVE_DIR   := _static/live/generated
LIVE_STAMP := $(LIVE_DIR)/.built
LIVE_DEPS  := data/model.pt transformer_lib/pipeline/onnx_export.py \
              transformer_lib/pipeline/decoding.py $(wildcard transformer_lib/components/*.py) \
              _static/vendor/MANIFEST.json

live: $(LIVE_STAMP)

$(LIVE_STAMP): $(LIVE_DEPS) $(STAMP)
	rm -rf $(LIVE_DIR)
	$(BIN)/python -m transformer_lib.pipeline.onnx_export --checkpoint data/model.pt --out $(LIVE_DIR)
	touch $@

# Executes the chapters, as many at once as there are cores, into _build/.jupyter_cache
# (unchanged notebooks are not run again), then builds the HTML. Any warning fails the build.
# Sphinx copies _static/ only when some page is rebuilt: after a change to _static/ alone
# (a style sheet, a script) the introduction's time stamp is renewed so that one page is.
book: venv live
	$(BIN)/python scripts/execute_chapters.py
	@if [ -f _build/html/intro.html ] && \
	  [ -n "$$(find _static -type f -newer _build/html/intro.html | head -n 1)" ]; then \
	  touch intro.md; fi
	$(BIN)/jupyter-book build . -W --keep-going
	@echo "Book built: open $(CURDIR)/_build/html/index.html"

# Headless Chromium for the browser tests (Debian's package; Playwright's own browser
# download is not used). Installed only when missing and we are root; otherwise the
# browser tests are skipped and say why.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then \
	  true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "Installing chromium for the browser tests (apt-get)..."; \
	  ( apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q --no-install-recommends chromium ) >/dev/null \
	  || echo "WARNING: could not install chromium: the browser tests will be SKIPPED." >&2; \
	else \
	  echo "WARNING: $(CHROMIUM) not found (apt-get install chromium, as root):" \
	       "the browser tests will be SKIPPED." >&2; \
	fi

unit: venv
	$(BIN)/python -m pytest -m "not browser"

# The tests run side by side as several pytest processes (scripts/run_tests.py): those
# that do not need the built book start at once, while the book is built; the browser
# tests (1280 px and phone, three parts each) once it is. `.venv/bin/python -m pytest`
# runs the same tests one by one, on a book built before.
test: venv chromium lint
	$(BIN)/python scripts/run_tests.py --book-command "$(MAKE) --no-print-directory book"

# Full-page screenshots of every page, at 1280 px and on a phone, in _build/screenshots/
# (with the accessibility checks, which visit every page at both widths).
screenshots: venv chromium book
	BOOK_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/browser/test_access.py

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Re-download the vendored JavaScript (_static/vendor) from npm; see scripts/vendor_js.py.
vendor: venv
	$(BIN)/python scripts/vendor_js.py

clean:
	rm -rf _build
