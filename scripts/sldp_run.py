"""Every rep of one (task, N, epsilon) of the sldp study: client data, the protocol's transcript and
partition, then the task's answers against the baselines."""

from locpriv.sldp.study import setting_stage
from locpriv.smk import logged

with logged(snakemake):
    wc, o = snakemake.wildcards, snakemake.output
    setting_stage(
        task=wc.task,
        n=int(wc.n),
        epsilon=float(wc.epsilon),
        reps=snakemake.params.reps,
        cfg=snakemake.params.cfg,
        seed=snakemake.params.seed,
        out={k: list(o[k]) for k in ("partition", "rounds", "reports", "regions", "evaluation")},
    )
