"""Snakemake's submission rate limiter is dropped for local runs only (locpriv.smk.drop_local_rate_limit)."""

from types import SimpleNamespace

import pytest

from locpriv.smk import drop_local_rate_limit


def workflow(local_exec: bool, **scheduler):
    return SimpleNamespace(local_exec=local_exec, scheduler=SimpleNamespace(**scheduler))


def test_a_local_run_drops_the_limiter():
    wf = workflow(True, job_rate_limiter=object())
    assert drop_local_rate_limit(wf) is True
    assert wf.scheduler.job_rate_limiter is None


@pytest.mark.parametrize(
    "wf",
    [
        workflow(False, job_rate_limiter="cluster"),  # a cluster executor keeps it: it spares the batch system
        workflow(True),  # a Snakemake without the attribute is left alone
        workflow(True, job_rate_limiter=None),  # --max-jobs-per-timespan unset (the API's default)
    ],
)
def test_anything_else_is_left_alone(wf):
    before = vars(wf.scheduler).copy()
    assert drop_local_rate_limit(wf) is False
    assert vars(wf.scheduler) == before
