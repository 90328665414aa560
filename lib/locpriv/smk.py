"""Glue for Snakemake rule scripts: logging and optional inputs."""

from __future__ import annotations

import contextlib
import logging
import resource
import sys
import time
import traceback


@contextlib.contextmanager
def logged(snakemake):
    """Send the script's output and any traceback to the rule's log file."""
    path = snakemake.log[0] if snakemake.log else None
    if path is None:
        yield
        return
    with open(path, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        logging.basicConfig(stream=fh, level=logging.INFO, force=True,
                            format="%(asctime)s %(levelname)s %(message)s")
        start = time.perf_counter()
        try:
            yield
            # read by benchmarks/bench_scale.py; peak RSS is the job process's high-water mark
            logging.info("job finished: wall %.3f s, peak RSS %.1f MB", time.perf_counter() - start,
                         resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        except Exception as exc:
            traceback.print_exc(file=fh)
            fh.flush()
            # one clear line on the console too; the log has the traceback
            print(f"{snakemake.rule}: {exc}", file=sys.__stderr__)
            raise


def optional_input(snakemake, name: str) -> str | None:
    value = getattr(snakemake.input, name, None)
    if isinstance(value, str):
        return value
    return value[0] if value else None
