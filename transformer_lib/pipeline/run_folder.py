"""The run folder of a training run: one process at a time, and writes that fail clearly.

* :func:`lock_run_folder` holds ``OUT/.lock`` (``fcntl.flock``) while a run trains into
  ``OUT``, so a second ``train`` into the same folder stops at once, naming the first
  (:class:`RunFolderBusy`); the operating system drops the lock of a dead process.
* :func:`training_session` is what a training loop holds: that lock, no temporaries of
  a killed run, and SIGINT/SIGTERM routed to the loop so that it stops and saves.
* :func:`failed_writes` turns an ``OSError`` while writing a run file into
  :class:`RunFolderError`, which names the file, the reason and the last good
  checkpoint (every write is atomic, so the files already there stay intact).

Used by :class:`~transformer_lib.pipeline.training.Trainer` and the command line.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "LOCK_NAME",
    "RunFolderBusy",
    "RunFolderError",
    "failed_writes",
    "lock_run_folder",
    "remove_stale_temporaries",
    "training_session",
]


class RunFolderError(RuntimeError):
    """A file of the run folder could not be written, so training stopped.

    The files already there are intact (every write is atomic): ``checkpoint.pt`` is the
    last one saved before the failure, if any. Attributes: ``path`` (the file that could
    not be written), ``reason`` (the operating system's words), ``step`` (the step the run
    had reached) and ``checkpoint_step`` (the step of the last good ``checkpoint.pt``, or
    None if none was saved).
    """

    def __init__(self, path: Path, reason: str, step: int, checkpoint_step: int | None):
        self.path, self.reason = path, reason
        self.step, self.checkpoint_step = step, checkpoint_step
        saved = (
            f"the last good checkpoint is {path.parent / 'checkpoint.pt'} (step {checkpoint_step})"
            if checkpoint_step is not None
            else "no checkpoint had been saved yet"
        )
        super().__init__(f"could not write {path} ({reason}) at step {step}; {saved}")


class RunFolderBusy(RuntimeError):
    """Another process is training into the same run folder (it holds ``OUT/.lock``).

    Attributes: ``folder``, ``pid`` and ``started`` (when that process took the folder,
    as recorded in the lock file; None if unreadable).
    """

    def __init__(self, folder: Path, pid: int | None, started: str | None):
        self.folder, self.pid, self.started = folder, pid, started
        who = f"process {pid}" if pid is not None else "another process"
        when = f", started {started}" if started else ""
        super().__init__(f"{folder} is in use by another training run ({who}{when})")


#: Name of the lock file inside a run folder.
LOCK_NAME = ".lock"
_held_locks: dict[Path, _RunLock] = {}  # run folders this process holds, by resolved path


class _RunLock:
    """An exclusive ``fcntl.flock`` on ``FOLDER/.lock``, which records the holder's PID and
    start time. The operating system drops the lock when its process dies, so a lock file
    left by a killed run never blocks the next one."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.created_folder = False
        self.fd: int | None = None
        self.depth = 0

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # not a POSIX system: train unlocked rather than not at all
            return
        if not self.folder.exists():
            self.folder.mkdir(parents=True)
            self.created_folder = True
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:  # an unwritable folder: the first write will say so
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_lock(fd)
                os.close(fd)
                raise RunFolderBusy(self.folder, holder.get("pid"), holder.get("started")) from None
            except OSError:  # a file system without flock: go on unlocked
                os.close(fd)
                return
            try:  # the holder before us may have removed the file as we opened it
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        record = json.dumps({"pid": os.getpid(), "started": started}) + "\n"
        os.ftruncate(fd, 0)
        os.write(fd, record.encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
            if self.created_folder and not any(self.folder.iterdir()):
                self.folder.rmdir()  # nothing was written: leave no empty folder behind
        except OSError:
            pass  # an unwritable folder keeps its lock file; the lock itself goes below
        os.close(self.fd)  # releases the flock
        self.fd = None


def _read_lock(fd: int) -> dict[str, Any]:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096).decode() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def lock_run_folder(folder: str | os.PathLike):
    """Hold a run folder for this process while the ``with`` block runs.

    A second process that tries to lock the same folder gets :class:`RunFolderBusy` at
    once, naming the first (PID and start time). Nested use in one process is allowed
    (the command line locks before reading the data, :meth:`Trainer.fit` again). The
    folder is created if needed (and removed again if nothing was written into it).

    Raises:
        RunFolderBusy: Another live process holds the folder.
    """
    key = Path(folder).absolute()
    lock = _held_locks.get(key)
    if lock is None:
        lock = _RunLock(Path(folder))
        lock.acquire()
        _held_locks[key] = lock
    lock.depth += 1
    try:
        yield lock
    finally:
        lock.depth -= 1
        if lock.depth == 0:
            del _held_locks[key]
            lock.release()


@contextlib.contextmanager
def failed_writes(trainer: Any, path: Path):
    """Turn a failed write of ``path`` into :class:`RunFolderError`.

    Args:
        trainer: The run (its ``step`` and ``checkpoint_step`` go into the error).
        path: The run file being written (not its temporary twin).
    """
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.filename and Path(exc.filename).name != path.name:
            reason += f", on {Path(exc.filename).name}"
        raise RunFolderError(path, reason, trainer.step, trainer.checkpoint_step) from exc


@contextlib.contextmanager
def training_session(out_dir: Path | None, on_signal):
    """What :meth:`Trainer.fit` holds while it trains: the run folder's lock (if it writes
    one), no temporaries left by a killed run, and SIGINT/SIGTERM routed to ``on_signal``
    (the loop then stops after its step and saves); the caller's handlers come back after.
    """
    with lock_run_folder(out_dir) if out_dir is not None else contextlib.nullcontext():
        remove_stale_temporaries(out_dir)
        previous = _install_signal_handlers(on_signal)
        try:
            yield
        finally:
            _restore_signal_handlers(previous)


def remove_stale_temporaries(out_dir: Path | None) -> None:
    """Delete temporary files a killed run may have left (``.NAME.tmp-PID``)."""
    if out_dir is not None and out_dir.is_dir():
        for tmp in out_dir.glob(".*.tmp-*"):
            tmp.unlink(missing_ok=True)


def _install_signal_handlers(handler) -> dict[int, Any]:
    """Route SIGINT/SIGTERM to ``handler`` (only possible in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_signal_handlers(previous: dict[int, Any]) -> None:
    for sig, old in previous.items():
        signal.signal(sig, old)
