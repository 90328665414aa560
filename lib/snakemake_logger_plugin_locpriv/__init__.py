"""Snakemake logger plugin ``locpriv``: the workflow's console in a few lines.

Snakemake's own quiet mode (``--quiet rules progress host reason``) still prints two lines
per scheduling round ("Select jobs to execute...", "Execute 1 jobs...") and five caching
notices, and without its progress lines nothing says how far a run is.  This handler,
selected by ``logger: [locpriv]`` in ``profiles/default``, writes instead:

* one progress line: jobs done / total and, once every checkpoint (the ingests, whose data
  decide how many shard jobs follow) has finished and so the total is final, the time left;
  on a terminal it is updated in place, elsewhere printed at each tenth of the run;
* warnings and errors, a failed job in one line (the job's own line, naming file, field and
  fix, is printed by the job itself: ``locpriv.smk.logged``);
* a ``--configfile`` that is not valid YAML as one line with its file, line and column.

Everything else (job blocks, scheduling chatter) is dropped.  ``--dry-run``, ``--verbose``,
``--debug-dag`` or ``LOCPRIV_LOG=full`` show Snakemake's full output (a ``--dry-run``'s errors in one
line, without the lines locating them in the Snakefile); ``--logger`` on the command line or
``--workflow-profile none`` replace this handler.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

from locpriv.smk import CHECKPOINT_RULES, ERROR_DIGEST

# Snakemake's messages that say nothing a user of this workflow acts on
NOISE = re.compile(
    r"^(Building DAG of jobs|Using shell:|Provided cores:|Rules claiming more threads|Conda environments:|"
    r"Singularity containers:|Select jobs to execute|Execute \d+ jobs|Assuming unrestricted shared|"
    r"Updating checkpoint dependencies|DAG of jobs will be updated|Shutting down|Complete log\(s\):|"
    r"Elapsed time:|Exiting because a job execution failed|Removing output files of failed job|"
    r"Restored previous version of|Workflow defines that rule .* is eligible for caching|"
    r"Will exit after finishing currently running jobs|At least one job did not complete|"
    r"Command '.*' returned non-zero exit status)"
)
# lines of an exception report that only locate it in Snakemake's or the Snakefile's code
LOCATION = re.compile(r"^(\w+(Error|Exception)( in file .*)?:|\s+File \".*\", line \d+)")


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        from snakemake.logging import DefaultFilter, DefaultFormatter

        s = self.common_settings
        # a debugging user also sees where in the Snakefile an error was raised
        self.debugging = s.verbose or s.debug_dag or os.environ.get("LOCPRIV_LOG") == "full"
        self.full = self.debugging or s.dryrun
        self.stream = sys.stdout if s.stdout else sys.stderr
        self.tty = self.stream.isatty()
        self.default_filter = DefaultFilter(s.quiet, s.debug_dag, s.verbose, s.dryrun, s.printshellcmds)
        self.setFormatter(DefaultFormatter(s.quiet, s.show_failed_logs))
        self.rule_of: dict = {}
        self.checkpoints_left: int | None = None
        self.updating = False
        self.started = self.last_print = None
        self.shown_tenth = -1
        self.progress_text = ""

    # the interface's abstract properties, as constants (a class attribute implements them)
    writes_to_stream = True
    writes_to_file = False
    has_filter = True
    has_formatter = True
    needs_rulegraph = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = getattr(record, "event", None)
            if self.full and (self.debugging or not _is_error(record, event)):
                if self.default_filter.filter(record):
                    self._write(self.format(record))
                return
            self._compact(record, event)
        except Exception:  # logging must never end the run
            self.handleError(record)

    def _compact(self, record: logging.LogRecord, event) -> None:
        if event == LogEvent.RUN_INFO and self.checkpoints_left is None:
            self.checkpoints_left = sum(
                n for rule, n in (getattr(record, "stats", None) or {}).items() if rule in _checkpoint_rules()
            )
        elif event == LogEvent.JOB_INFO:
            self.rule_of[record.jobid] = record.rule_name
            self.started = self.started or time.monotonic()
        elif event == LogEvent.JOB_FINISHED:
            # Snakemake adds a checkpoint's dependent jobs after its progress line: the total is
            # final from the next job's end on
            rule = self.rule_of.get(getattr(record, "job_id", None))
            self.updating = bool(self.checkpoints_left) and rule in _checkpoint_rules()
            self.checkpoints_left = (self.checkpoints_left or 0) - self.updating
        elif event == LogEvent.PROGRESS:
            self._progress(record.done, record.total)
        elif event in (LogEvent.JOB_ERROR, LogEvent.GROUP_ERROR):
            self._job_error(record)
        elif event in (None, LogEvent.ERROR) and record.levelno >= logging.WARNING:
            self._message(str(record.msg or ""))
        elif event is None and record.levelno == logging.INFO and not NOISE.match(str(record.msg or "")):
            self._write(str(record.msg or ""))

    def _progress(self, done: int, total: int) -> None:
        final = self.checkpoints_left == 0 and not self.updating
        elapsed = time.monotonic() - (self.started or time.monotonic())
        text = f"locpriv: {done}/{total} jobs done"
        if done == total and final:
            text += f" in {_duration(elapsed)}"
        elif final and done:
            text += f", about {_duration(elapsed * (total - done) / done)} left"
        else:
            text += " (more once the data are read)"
        last = done == total and final
        self.progress_text = "" if last else text  # redrawn under later messages until the end
        tenth = 10 * done // max(total, 1)
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if last else ""))
            self.stream.flush()
        elif tenth != self.shown_tenth or done == total:
            self.shown_tenth = tenth
            self._write(text)

    def _job_error(self, record: logging.LogRecord) -> None:
        logs = [str(p) for p in getattr(record, "log", None) or []]
        try:
            with open(ERROR_DIGEST) as fh:
                reported = fh.read()
        except OSError:
            reported = ""
        if logs and any(p in reported for p in logs):
            return  # the job printed its own line naming file, field and fix
        rule = getattr(record, "rule_name", None) or "a group of jobs"
        self._write(f"Error in rule {rule}" + (f" (log: {', '.join(logs)})" if logs else ""))

    def _message(self, text: str) -> None:
        if "not valid JSON or YAML" in text and (line := _configfile_error()):
            self._write(line)
            return
        lines = [ln for ln in text.splitlines() if ln.strip() and not LOCATION.match(ln) and not NOISE.match(ln)]
        if lines:
            self._write("\n".join(lines))

    def _write(self, text: str) -> None:
        if not text:
            return
        clear = "\r\033[K" if self.tty and self.progress_text else ""
        self.stream.write(clear + text + "\n")
        if self.tty and self.progress_text:
            self.stream.write(self.progress_text)
        self.stream.flush()


def _is_error(record: logging.LogRecord, event) -> bool:
    """An error that is not a job's: one line in a --dry-run too (its full output would add the lines
    locating it in the Snakefile, a traceback block to a user; issue 40)."""
    return event in (None, LogEvent.ERROR) and record.levelno >= logging.ERROR


def _checkpoint_rules() -> set[str]:
    return set(filter(None, os.environ.get(CHECKPOINT_RULES, "").split(",")))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def _configfile_error() -> str | None:
    """The first ``--configfile`` that is not valid YAML, as one line with its line and column."""
    from locpriv.config import ConfigError
    from locpriv.smk import check_yaml

    files, taking = [], False
    for arg in sys.argv[1:]:
        if arg in ("--configfile", "--configfiles"):
            taking = True
        elif arg.startswith("--configfile="):
            files.append(arg.split("=", 1)[1])
        elif taking and not arg.startswith("-"):
            files.append(arg)
        else:
            taking = False
    for path in files:
        try:
            check_yaml(path)
        except ConfigError as exc:
            return f"invalid configuration: {exc}"
    return None
