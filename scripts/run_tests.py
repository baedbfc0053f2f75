"""Run the whole test suite as several pytest processes at once: what ``make test`` runs.

    python scripts/run_tests.py              # every suite, side by side (the book is built)
    python scripts/run_tests.py -x -q        # extra arguments go to every pytest run
    python scripts/run_tests.py --book-command "make book"   # build the book meanwhile

A plain ``pytest`` runs the tests one after the other, on one core at a time, and only
once the book is built. Here they run as suites, each a pytest process of its own, so
that both cores stay busy from the start (on two cores the whole run is bound by the
processor: the book's chapters, Chromium rendering and checking the pages, and the
library's tests each keep a core busy):

* the tests that do not need the built book: ``other``, and ``slow`` (those that train a
  model for tens of seconds). With ``--book-command`` they start at once, while the book
  is being built (its report is ``book``);
* once the book is built: the browser tests in three parts by page
  (``tests/browser/conftest.py``), at 1280 px (``browser-1`` .. ``browser-3``, with the
  tests that read the built HTML, marker ``book``) and on the phone (``phone-1`` ..
  ``phone-3``). A part's tests share one browser and load each of its pages once;
* last, alone: the tests that hold a wall-clock time to a limit (marker ``timing``).
  Beside the busy suites they would measure the others' load.

Each suite writes its report to ``_build/test-logs/<suite>.log``, with its own temporary
folder and cache; a report is printed in full as soon as its suite ends, and a last line
says how long each took. The exit status is 0 only when the book was built and every
suite passes (pytest's own status otherwise: 1 for failures, 2 for an interrupted run, and
so on; the book command's status if it failed, and then the suites that need the book do
not run).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "_build" / "test-logs"
TEMP = ROOT / "_build" / "pytest-tmp"

sys.path.insert(0, str(ROOT / "tests"))
from book_pages import BOOK_TEST_FILES  # noqa: E402  (no heavy imports)

#: What the suites select (pytest markers): tests that need the built book, and not.
_BOOK = "(browser or book)"
_PARTS = {1: "not part_2 and not part_3", 2: "part_2", 3: "part_3 and not part_2"}
#: Where each kind of suite collects its tests (each process imports only those files; the
#: markers select). The tests that need the book are the browser tests and BOOK_TEST_FILES.
_BOOK_PATHS = ["tests/browser", *(f"tests/{name}" for name in BOOK_TEST_FILES)]
_OTHER_PATHS = ["tests", "--ignore=tests/browser"]

#: The suites: a name, the pytest arguments that select it, and whether it needs the built
#: book (it starts once ``--book-command`` has built it).
SUITES = (
    ("other", ["-m", f"not {_BOOK} and not slow and not timing", *_OTHER_PATHS], False),
    ("slow", ["-m", f"not {_BOOK} and slow and not timing", *_OTHER_PATHS], False),
    *(
        (
            f"{name}-{part}",
            ["-m", f"{_BOOK} and {viewport} and {where} and not timing", *_BOOK_PATHS],
            True,
        )
        for name, viewport in (("browser", "not phone"), ("phone", "phone"))
        for part, where in _PARTS.items()
    ),
)
#: Run after the suites above, alone: tests that hold a wall-clock time to a limit (marker
#: ``timing``). Beside the busy suites on two cores they would measure the others' load.
LAST = (("timing", ["-m", "timing"], False),)


@dataclass
class Run:
    name: str
    process: subprocess.Popen
    log: Path
    started: float
    seconds: float | None = None
    returncode: int | None = None
    #: Processor time, user + system, of the suite and of every process that was waited
    #: for (its kernels and subprocesses): on a machine that all suites share, what each
    #: costs. Not the browser's: Playwright's driver does not wait for Chromium's
    #: processes, so a browser suite counts only its Python side.
    cpu_seconds: float | None = None

    def poll(self) -> bool:
        """Whether the suite has ended."""
        pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.returncode = os.waitstatus_to_exitcode(status)
        self.process.returncode = self.returncode
        self.seconds = time.monotonic() - self.started
        self.cpu_seconds = usage.ru_utime + usage.ru_stime
        return True


def launch(name: str, command: list[str]) -> Run:
    """Start a command, its output into the log file ``<name>.log``."""
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{name}.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    return Run(name=name, process=process, log=log, started=time.monotonic())


def start(name: str, select: list[str], extra: list[str]) -> Run:
    """Start one pytest process for a suite, its output into its log file."""
    TEMP.mkdir(parents=True, exist_ok=True)  # pytest makes only the last folder itself
    command = [
        sys.executable,
        "-m",
        "pytest",
        *select,
        f"--basetemp={TEMP / name}",
        "-o",
        f"cache_dir={ROOT / '_build' / 'pytest-cache' / name}",
        *extra,
    ]
    return launch(name, command)


def report(run: Run) -> None:
    """Print a finished suite's whole report."""
    bar = "=" * 20
    what = "build" if run.name == "book" else "tests"
    print(f"\n{bar} {run.name} {what} ({run.log.relative_to(ROOT)}) {bar}", flush=True)
    sys.stdout.write(run.log.read_text(encoding="utf-8", errors="replace"))
    sys.stdout.flush()


def _book_command(args: list[str]) -> tuple[str | None, list[str]]:
    """``--book-command CMD`` taken out of the arguments (the rest go to pytest)."""
    if "--book-command" not in args:
        return None, args
    i = args.index("--book-command")
    if i + 1 >= len(args) or not args[i + 1].strip():
        raise SystemExit('run_tests.py: --book-command needs a command, e.g. "make book"')
    return args[i + 1], args[:i] + args[i + 2 :]


def main(argv: list[str] | None = None) -> int:
    book_command, extra = _book_command(list(sys.argv[1:] if argv is None else argv))
    began = time.monotonic()
    print(
        "Running the test suites side by side"
        + (", the book being built meanwhile for those that need it" if book_command else "")
        + ", then the timing tests alone; their reports follow as each ends "
        f"(live: {LOGS.relative_to(ROOT)}/*.log).",
        flush=True,
    )
    book = launch("book", shlex.split(book_command)) if book_command else None
    later = [(name, select) for name, select, needs in SUITES if needs and book is not None]
    first = [
        start(name, select, extra) for name, select, needs in SUITES if not needs or book is None
    ]
    runs = ([book] if book else []) + first
    not_run: list[str] = []

    def ended(run: Run) -> list[Run]:
        if run is not book:
            return []
        if run.returncode != 0:
            not_run.extend(name for name, _ in later)
            return []
        started = [start(name, select, extra) for name, select in later]
        runs.extend(started)
        return started

    if not _wait(list(runs), ended):
        return 2
    if not not_run:
        last = [start(name, select, extra) for name, select, _ in LAST]
        runs += last
        if not _wait(last, lambda run: []):
            return 2
    else:
        not_run += [name for name, _, _ in LAST]
    took = ", ".join(
        f"{run.name} {run.seconds:.0f} s, {run.cpu_seconds:.0f} CPU-s "
        f"({'passed' if run.returncode == 0 else 'FAILED'})"
        for run in runs
    )
    if not_run:
        took += f"; not run, as the book did not build: {', '.join(not_run)}"
    print(
        f"\nAll suites done in {time.monotonic() - began:.0f} s: {took} "
        "(CPU-s: the processes each suite waited for; a browser's are not among them).",
        flush=True,
    )
    failed = [run.returncode for run in runs if run.returncode != 0]
    return failed[0] if failed else 0


def _wait(runs: list[Run], ended) -> bool:
    """Wait for the runs, printing each report as it ends; ``ended(run)`` may return runs
    to wait for as well. False if interrupted (Ctrl-C)."""
    waiting = list(runs)
    try:
        while waiting:
            for run in list(waiting):
                if run.poll():
                    waiting.remove(run)
                    report(run)
                    waiting += ended(run)
            time.sleep(0.5)
    except KeyboardInterrupt:
        for run in waiting:
            run.process.send_signal(signal.SIGINT)
        for run in waiting:
            deadline = time.monotonic() + 30
            while not run.poll():
                if deadline is not None and time.monotonic() > deadline:
                    run.process.kill()  # once: it has had 30 s to stop on its own
                    deadline = None
                time.sleep(0.2)
            report(run)
        print("\nInterrupted: the reports above are as far as each suite got.", flush=True)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
