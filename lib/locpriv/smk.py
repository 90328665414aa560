"""Glue for Snakemake rule scripts: logging, one-line errors and optional inputs."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import resource
import shutil
import sys
import threading
import time
import traceback

from .integrity import record_digests

# Console lines of failed jobs are also appended here, so the console logger knows a job printed its
# own line; warnings too, so the Snakefile's ``onerror`` / ``onsuccess`` handlers repeat them at the end.
ERROR_DIGEST = ".snakemake/locpriv-errors.txt"
WARNING_DIGEST = ".snakemake/locpriv-warnings.txt"


# The Snakefile names the workflow's checkpoint rules in this environment variable for the
# console logger (snakemake_logger_plugin_locpriv): the job total is final once they have run.
CHECKPOINT_RULES = "LOCPRIV_CHECKPOINT_RULES"


def announce_checkpoints(rules) -> None:
    os.environ[CHECKPOINT_RULES] = ",".join(rule.name for rule in rules if rule.is_checkpoint)


def console(line: str) -> None:
    """A line for the user's console (a job's stdout/stderr go to its log), also logged."""
    # a named logger: the root one would install a console handler in Snakemake's own process
    logging.getLogger("locpriv").info(line)
    _print(line)


def _print(line: str) -> None:
    stream = sys.__stderr__
    # on a terminal, clear the progress line the run's logger keeps updated in place
    print(("\r\033[K" if stream.isatty() else "") + line, file=stream, flush=True)


def warn(line: str, emit=console) -> None:
    """A ``warning: ...`` line on the console (``emit``), repeated at the end of the run."""
    emit(line)
    _append(WARNING_DIGEST, line)


def _append(digest: str, line: str) -> None:
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(digest), exist_ok=True)
        with open(digest, "a") as fh:
            fh.write(line + "\n")


def error_line(rule: str, exc: BaseException, log_path: str | None) -> str:
    """The one console line for a failed job: what, where and the fix; details are in the log."""
    from .config import ConfigError
    from .errors import InputError

    if isinstance(exc, (InputError, ConfigError)):
        text = str(exc)  # already names the file/key, field and fix
    elif isinstance(exc, MemoryError):
        text = (
            "out of memory. Fix: lower the grid size, attack.batch, users_per_shard or the "
            "mechanism's size parameters in the config, or give the job more memory"
        )
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


def _cpu_seconds() -> float:
    """User + system CPU time of this process, its threads and its waited-for children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


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
            logging.basicConfig(
                stream=fh, level=logging.INFO, force=True, format="%(asctime)s %(levelname)s %(message)s"
            )
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            yield
            # read by perf/bench_scale.py; peak RSS is the job process's high-water mark
            logging.info(
                "job finished: wall %.3f s, CPU %.3f s, peak RSS %.1f MB",
                time.perf_counter() - start,
                _cpu_seconds() - cpu_start,
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            )
        outputs = getattr(snakemake, "output", [])
        record_digests(outputs)  # what it wrote, byte for byte: locpriv.integrity checks against it
        record_outcome(outputs, failed=False)
    except Exception as exc:  # every failure becomes one line + exit status 1
        record_outcome(getattr(snakemake, "output", []), failed=True)
        if path:
            with open(path, "a") as fh:
                traceback.print_exc(file=fh)
        line = error_line(snakemake.rule, exc, path)
        _print(line)  # the log file is closed: the traceback above is what it keeps
        _append(ERROR_DIGEST, line)
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
        raise ConfigError(
            f"{where}: YAML syntax error: {exc.problem or exc.context}. "
            "Fix: correct the YAML at that position (quote values with ':' or '#', "
            "close brackets, indent with spaces)"
        ) from None
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
    for digest in (ERROR_DIGEST, WARNING_DIGEST):  # the handlers repeat only this run's lines
        with contextlib.suppress(OSError):
            os.remove(digest)
    shutil.rmtree(FAILED_DIR, ignore_errors=True)  # and handle only this run's failed jobs
    if removed:
        return f"locpriv: removed {len(removed)} lock file(s) left by a killed run; resuming", live
    return None, live


def with_static_inputs(rules, targets: list[str], root: str) -> list[str]:
    """``targets`` plus, recursively, the inputs under ``root`` of the rules that make them.

    Only rules without wildcards in their outputs and only inputs that are plain paths (no
    function, no wildcard) are followed: what the DAG needs for certain, read off the rule
    definitions before the DAG exists (e.g. a study summary's per-run files).
    """
    want = {os.path.normpath(t) for t in targets}
    inside = os.path.normpath(root) + os.sep
    grew = True
    while grew:
        grew = False
        for rule in rules:
            outputs = [str(f) for f in rule.output]
            if any("{" in f for f in outputs) or want.isdisjoint(map(os.path.normpath, outputs)):
                continue
            for f in rule.input:
                path = os.path.normpath(f) if isinstance(f, str) and "{" not in f else None
                if path and path.startswith(inside) and path not in want:
                    want.add(path)
                    grew = True
    return sorted(want)


def remove_damaged(files: list[str], folders) -> list[str]:
    """Remove this config's outputs that are not whole, so this run makes them again.

    ``files`` are the outputs the current config's DAG makes (never anything else under
    results/: another config's files and stray files are not touched); ``folders()``, called
    once the files are checked (it may read them), maps each directory output (a randomize
    job's ``view/batch~k``) to the files its job writes in it.
    Snakemake sees only the folder, so a folder with a missing or damaged file goes whole;
    other files in it are ignored.  Every removed path is a target of ``rule all``, so the
    same command makes it again.  Checks are structural (:mod:`locpriv.integrity`) and skipped
    for files unchanged since they last passed.  Returns one console line per removal.
    """
    from .integrity import KINDS, Verified

    verified, lines = Verified(VERIFIED), []
    for path in files:
        if path.endswith(KINDS) and (why := verified.damage(path)):
            os.remove(path)
            lines.append(f"locpriv: removed damaged {path} ({why}); it is made again in this run")
    for folder, inside in folders().items():
        if not os.path.isdir(folder):
            continue
        missing = next((f for f in inside if not os.path.exists(f)), None)
        why = (
            f"{os.path.basename(missing)} missing"
            if missing
            else next((f"{os.path.basename(f)}: {w}" for f in inside if (w := verified.damage(f))), None)
        )
        if why:
            shutil.rmtree(folder)
            lines.append(f"locpriv: removed {folder} ({why}); its job makes it again in this run")
    verified.save()
    return lines


def remove_temporaries(root: str) -> list[str]:
    """Remove the temporaries (``locpriv.io.is_temporary``) a killed run's writers left under ``root``.

    A job writes each output to a temporary beside it and renames it when whole (``locpriv.io``); a
    job killed with -9 mid-write leaves the temporary, which no later job would remove (issue 40: two
    0-byte ``results/plots/.*.png.*.tmp``).  Called only when no other run is live in this working
    directory, so no writer is alive.  Returns the console line (none when nothing was removed).
    """
    from .io import is_temporary

    found = []
    for folder, dirs, names in os.walk(root):
        for name in [n for n in dirs if is_temporary(n)]:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            dirs.remove(name)
            found.append(os.path.join(folder, name))
        for name in filter(is_temporary, names):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))
                found.append(os.path.join(folder, name))
    if not found:
        return []
    return [f"locpriv: removed {len(found)} temporary file(s) a killed run left in {root}: {', '.join(sorted(found))}"]


# A job that fails records its outputs here (one file each, named by the path's hash), for
# :func:`distrust_restored` at the end of the run; cleared when a run starts.
FAILED_DIR = ".snakemake/locpriv-failed"
VERIFIED = ".snakemake/locpriv-verified.json"


def _failed_marker(path: str) -> str:
    return os.path.join(FAILED_DIR, hashlib.sha1(os.path.normpath(path).encode()).hexdigest())


def record_outcome(outputs, failed: bool) -> None:
    """Note (failed) or forget (succeeded) a job's outputs for :func:`distrust_restored`."""
    for path in map(str, outputs):
        with contextlib.suppress(OSError):
            if failed:
                os.makedirs(FAILED_DIR, exist_ok=True)
                with open(_failed_marker(path), "w") as fh:
                    fh.write(os.path.normpath(path))
            else:
                os.remove(_failed_marker(path))


def drop_local_rate_limit(workflow) -> bool:
    """Switch off Snakemake's job-submission rate limiter for a local run (Snakemake ``onstart``).

    Snakemake's command line sets ``--max-jobs-per-timespan 100/1s`` for every executor (its API's
    default is no limit), and with a limiter the scheduler, after each pass that started jobs or
    saw one finish, arms a one-second timer that starts another pass, which arms another: every job
    event adds a chain of passes that runs once a second until the workflow ends, each pass
    checking the inputs of every ready job (Snakemake 9.27, ``scheduling/job_scheduler.py``).  The
    main process's CPU so grows with jobs finished × time × jobs ready: in a 300-job toy DAG
    (150 pairs of 0.5 s jobs, 2 idle cores; ``perf/bench_scheduler.py``, 3 pairs of runs) 68-70 CPU-s with
    it, 17-19 without, same wall time.  On a local
    run 100 submissions a second limit nothing (a job is a process start); on a cluster the limit
    spares the batch system, so it stays.  Returns whether the limiter was dropped; a Snakemake
    whose scheduler has no such attribute is left alone.
    """
    scheduler = getattr(workflow, "scheduler", None)
    if not workflow.local_exec or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    scheduler.job_rate_limiter = None
    return True


def distrust_restored(workflow) -> list[str]:
    """Mark incomplete every job whose failure left an output on disk (Snakemake ``onerror``).

    Snakemake restores an ``update()`` output when its job fails, with a new mtime and the
    failed job's input checksums recorded as if it had run, so the next run would call the old
    file up to date although its inputs (or code) changed.  Marked incomplete, exactly as a job
    is while it runs, its job runs again in the next run (``rerun-incomplete``, profiles/default)
    and fails with the same message until its input is fixed; the old file stays until then.
    """
    failed = set()
    with contextlib.suppress(OSError):
        for name in os.listdir(FAILED_DIR):
            with contextlib.suppress(OSError), open(os.path.join(FAILED_DIR, name)) as fh:
                failed.add(fh.read())
    failed = {path for path in failed if os.path.exists(path)}
    if not failed or workflow.persistence is None:
        return []
    jobs = [job for job in workflow.dag.jobs if failed.intersection(map(os.path.normpath, map(str, job.output)))]
    for job in jobs:
        workflow.persistence.started(job)
    return [f"locpriv: kept {path} from before its failed job; the next run makes it again" for path in sorted(failed)]


def closing_lines(open_first: list[str], failed: bool, emit=console) -> None:
    """The console's last lines (``emit``): this run's warnings, then the files to open after a success.

    A failed job's line is not repeated: it was printed when the job failed, and the run stops
    there (issue 40: every data error appeared twice).
    """
    lines = []
    with contextlib.suppress(OSError), open(WARNING_DIGEST) as fh:
        lines += list(dict.fromkeys(fh.read().splitlines()))[-20:]
    present = [f for f in open_first if os.path.exists(f)]
    if not failed and present:
        lines.append(f"locpriv: done. Open {', '.join(present)}; `snakemake --report report.html` writes the report")
    for line in lines:
        emit(line)


def remove_stale_plots(folder: str, targets: list[str]) -> list[str]:
    """Remove the figures in ``folder`` that this config's run does not make.

    Two configs run in the same results_dir share results/plots: the second
    run's summary holds only its runs, so the first one's per-dataset figures
    would pass for its own.  Called after a successful run (Snakefile ``onsuccess``).
    """
    if not os.path.isdir(folder):
        return []
    keep = {os.path.normpath(t) for t in targets}
    stale = sorted(
        name
        for name in os.listdir(folder)
        if name.endswith(".png") and os.path.normpath(os.path.join(folder, name)) not in keep
    )
    for name in stale:
        os.remove(os.path.join(folder, name))
    if not stale:
        return []
    return [
        f"locpriv: removed {len(stale)} figure(s) of another config from {folder}: {', '.join(stale)} "
        "(give each config its own results_dir to keep both)"
    ]
