"""Run the whole test suite as three pytest processes at once: what ``make test`` runs.

    python scripts/run_tests.py              # every suite, side by side
    python scripts/run_tests.py -x -q        # extra arguments go to every pytest run

The browser tests (``tests/browser``: headless Chromium on the built book) spend much of
their time waiting for the browser, and the other tests (the library, the command line,
the notebooks as files) keep a core busy with PyTorch. Run one after the other, as a plain
``pytest`` does, they leave a core idle for minutes; side by side they finish in about the
time of the longest suite alone. The browser tests are split by viewport: those at
1280 px and those on the phone (marker ``phone``) never share a page. Each suite runs in
its usual order in its own process (a viewport's tests share one loaded page per book
page, in the order pytest gives them), with its own temporary folder and cache.

Each run writes its report to ``_build/test-logs/<suite>.log``; a report is printed in
full as soon as its suite ends, and a last line says how long each took. The exit status is
0 only when every suite passes (pytest's own status otherwise: 1 for failures, 2 for an
interrupted run, and so on).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "_build" / "test-logs"
TEMP = ROOT / "_build" / "pytest-tmp"

#: The suites: a name, and the pytest arguments that select it. The browser tests on the
#: phone (``phone``: a page of their own in a phone-sized browser) share no page with the
#: others, so they run in a process of their own.
SUITES = (
    ("browser", ["-m", "browser and not phone and not timing"]),
    ("phone", ["-m", "browser and phone and not timing"]),
    ("other", ["-m", "not browser and not timing"]),
)
#: Run after the suites above, alone: tests that hold a wall-clock time to a limit (marker
#: ``timing``). Beside the busy suites on two cores they would measure the others' load.
LAST = (("timing", ["-m", "timing"]),)


@dataclass
class Run:
    name: str
    process: subprocess.Popen
    log: Path
    started: float
    seconds: float | None = None
    returncode: int | None = None

    def poll(self) -> bool:
        """Whether the suite has ended."""
        pid, status = os.waitpid(self.process.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.returncode = os.waitstatus_to_exitcode(status)
        self.process.returncode = self.returncode
        self.seconds = time.monotonic() - self.started
        return True


def start(name: str, select: list[str], extra: list[str]) -> Run:
    """Start one pytest process for a suite, its output into its log file."""
    LOGS.mkdir(parents=True, exist_ok=True)
    TEMP.mkdir(parents=True, exist_ok=True)  # pytest makes only the last folder itself
    log = LOGS / f"{name}.log"
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
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    return Run(name=name, process=process, log=log, started=time.monotonic())


def report(run: Run) -> None:
    """Print a finished suite's whole report."""
    bar = "=" * 20
    print(f"\n{bar} {run.name} tests ({run.log.relative_to(ROOT)}) {bar}", flush=True)
    sys.stdout.write(run.log.read_text(encoding="utf-8", errors="replace"))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    began = time.monotonic()
    print(
        "Running the browser tests (1280 px, phone) and the other tests side by side, then "
        "the timing tests alone; "
        "their reports follow "
        f"as each ends (live: {LOGS.relative_to(ROOT)}/*.log).",
        flush=True,
    )
    runs = []
    for phase in (SUITES, LAST):
        started = [start(name, select, extra) for name, select in phase]
        runs += started
        if not _wait(started):
            return 2
    took = ", ".join(
        f"{run.name} {run.seconds:.0f} s ({'passed' if run.returncode == 0 else 'FAILED'})"
        for run in runs
    )
    print(f"\nAll suites done in {time.monotonic() - began:.0f} s: {took}.", flush=True)
    failed = [run.returncode for run in runs if run.returncode != 0]
    return failed[0] if failed else 0


def _wait(runs: list[Run]) -> bool:
    """Wait for the runs, printing each report as it ends; False if interrupted (Ctrl-C)."""
    waiting = list(runs)
    try:
        while waiting:
            for run in list(waiting):
                if run.poll():
                    waiting.remove(run)
                    report(run)
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
