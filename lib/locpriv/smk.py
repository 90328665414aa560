"""Glue for Snakemake rule scripts: logging, one-line errors and optional inputs."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import shutil
import sys
import threading
import time
import traceback

# Console lines of failed jobs are also appended here, so the Snakefile's
# ``onerror`` handler can repeat them as the last lines of the console.
ERROR_DIGEST = ".snakemake/locpriv-errors.txt"


def console(line: str) -> None:
    """A line for the user's console (a job's stdout/stderr go to its log), also logged."""
    logging.info(line)
    print(line, file=sys.__stderr__, flush=True)


def error_line(rule: str, exc: BaseException, log_path: str | None) -> str:
    """The one console line for a failed job: what, where and the fix; details are in the log."""
    from .config import ConfigError
    from .errors import InputError

    if isinstance(exc, (InputError, ConfigError)):
        text = str(exc)  # already names the file/key, field and fix
    elif isinstance(exc, MemoryError):
        text = ("out of memory. Fix: lower the grid size, attack.batch, users_per_shard or the "
                "mechanism's size parameters in the config, or give the job more memory")
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())  # one line, whatever the exception text holds
    return f"Error in {rule}: {text}" + (f" (traceback: {log_path})" if log_path else "")


def _exit_with_parent(poll_s: float = 1.0) -> None:
    """End this job when the process that started it (Snakemake) dies.

    After ``kill -9`` of Snakemake, bash has exec'd the script, so our parent
    was Snakemake and we are re-parented: the watchdog notices and exits, so no
    orphaned job keeps running (and holding memory) beside the resumed run.
    """
    global _watching
    if _watching:
        return
    _watching = True
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="locpriv-parent-watchdog", daemon=True).start()


_watching = False
# A rule script (Snakemake runs it from .snakemake/scripts/) starts watching at this import, before
# its heavy imports: a job killed while still importing must not outlive Snakemake either.
if sys.argv and f"{os.sep}.snakemake{os.sep}scripts{os.sep}" in sys.argv[0]:
    _exit_with_parent()


@contextlib.contextmanager
def logged(snakemake):
    """Run a rule script's body with its output and any traceback in the rule's log.

    A failure prints ONE line on the console (the error, naming file/key, field
    and fix; see :func:`error_line`) and exits with status 1 without a Python
    traceback on the console; the traceback goes to the log file.
    """
    _exit_with_parent()
    path = snakemake.log[0] if snakemake.log else None
    sink = open(path or os.devnull, "w")  # noqa: SIM115 (closed by the `with` below; a failed open is not ours)
    try:
        with sink as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
            logging.basicConfig(stream=fh, level=logging.INFO, force=True,
                                format="%(asctime)s %(levelname)s %(message)s")
            start = time.perf_counter()
            yield
            # read by perf/bench_scale.py; peak RSS is the job process's high-water mark
            logging.info("job finished: wall %.3f s, peak RSS %.1f MB", time.perf_counter() - start,
                         resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    except Exception as exc:  # every failure becomes one line + exit status 1
        if path:
            with open(path, "a") as fh:
                traceback.print_exc(file=fh)
        line = error_line(snakemake.rule, exc, path)
        print(line, file=sys.__stderr__, flush=True)
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(ERROR_DIGEST), exist_ok=True)
            with open(ERROR_DIGEST, "a") as fh:
                fh.write(line + "\n")
        raise SystemExit(1) from None


def optional_input(snakemake, name: str) -> str | None:
    value = getattr(snakemake.input, name, None)
    if isinstance(value, str):
        return value
    return value[0] if value else None


def check_yaml(path: str) -> None:
    """Parse a YAML config file; a syntax error becomes one line with its line and column."""
    import yaml

    from .config import ConfigError

    if not os.path.exists(path):
        return  # Snakemake reports a missing config file itself
    try:
        with open(path) as fh:
            yaml.safe_load(fh)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else path
        raise ConfigError(f"{where}: YAML syntax error: {exc.problem or exc.context}. "
                          "Fix: correct the YAML at that position (quote values with ':' or '#', "
                          "close brackets, indent with spaces)") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: YAML syntax error: {' '.join(str(exc).split())}") from None


def _is_live_snakemake(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return True  # no /proc: trust the pid
    # a recycled pid of another program is not our run; an empty cmdline (process starting) may be
    return b"snakemake" in cmdline or not cmdline


def claim_workdir(root: str = ".snakemake") -> tuple[str | None, bool]:
    """Register this Snakemake process; drop the locks a killed (kill -9) run left behind.

    Snakemake keeps its directory locks until a run ends cleanly, so after a
    crash the same command would stop with a LockException until ``--unlock``.
    Each run records its pid under ``.snakemake/locpriv-pids/``; locks with no
    live recorded Snakemake process beside them are stale and are removed, so
    one command resumes.  A live concurrent run keeps its locks.
    Returns (the line to print when stale locks were removed, whether another run is live).
    """
    import atexit

    pids = os.path.join(root, "locpriv-pids")
    locks = os.path.join(root, "locks")
    os.makedirs(pids, exist_ok=True)
    live = False
    for name in os.listdir(pids):
        if name.isdigit() and int(name) != os.getpid() and _is_live_snakemake(int(name)):
            live = True
        elif name.isdigit() and int(name) != os.getpid():
            with contextlib.suppress(OSError):
                os.remove(os.path.join(pids, name))
    removed = []
    if not live and os.path.isdir(locks):
        for name in os.listdir(locks):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(locks, name))
                removed.append(name)
    mine = os.path.join(pids, str(os.getpid()))
    open(mine, "w").close()
    atexit.register(lambda: os.path.exists(mine) and os.remove(mine))
    with contextlib.suppress(OSError):
        os.remove(ERROR_DIGEST)  # the onerror handler repeats only this run's errors
    if removed:
        return f"locpriv: removed {len(removed)} lock file(s) left by a killed run; resuming", live
    return None, live


def remove_damaged(results: str = "results") -> list[str]:
    """Remove finished outputs that cannot be read back, so Snakemake makes them again.

    Snakemake only sees that a file exists; a truncated Parquet or NetCDF file (disk
    full, a copy interrupted, an edit by hand) would otherwise be read by the next job
    and fail there, or be taken as done.  Returns one console line per removed file.
    """
    from .io import damage

    lines = []
    if not os.path.isdir(results):
        return lines
    for folder, _, files in os.walk(results):
        for name in files:
            if name.startswith(".") or not name.endswith((".parquet", ".nc", ".png", ".json")):
                continue
            path = os.path.join(folder, name)
            why = damage(path)
            if not why:
                continue
            if os.path.basename(folder).startswith("batch~"):
                # a file of a directory output (a randomize job's view/batch~k): Snakemake sees only
                # the folder, so the whole folder goes and its job makes every shard again
                shutil.rmtree(folder)
                lines.append(f"locpriv: removed {folder} ({name}: {why}); it is made again when needed")
                break
            os.remove(path)
            lines.append(f"locpriv: removed damaged {path} ({why}); it is made again when needed")
    return lines


def remove_stale_plots(folder: str, targets: list[str]) -> list[str]:
    """Remove the figures in ``folder`` that this config's run does not make.

    Two configs run in the same results_dir share results/plots: the second
    run's summary holds only its runs, so the first one's per-dataset figures
    would pass for its own.  Called after a successful run (Snakefile ``onsuccess``).
    """
    if not os.path.isdir(folder):
        return []
    keep = {os.path.normpath(t) for t in targets}
    stale = sorted(name for name in os.listdir(folder)
                   if name.endswith(".png") and os.path.normpath(os.path.join(folder, name)) not in keep)
    for name in stale:
        os.remove(os.path.join(folder, name))
    if not stale:
        return []
    return [f"locpriv: removed {len(stale)} figure(s) of another config from {folder}: {', '.join(stale)} "
            "(give each config its own results_dir to keep both)"]
