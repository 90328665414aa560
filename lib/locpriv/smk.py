"""Glue for Snakemake rule scripts: logging and optional inputs."""

from __future__ import annotations

import contextlib
import logging
import sys
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
        try:
            yield
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
