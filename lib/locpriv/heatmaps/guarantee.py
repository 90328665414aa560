"""The recorded guarantee of a distributed-DP heatmap run, shared by the study and the DAG's mechanisms.

Its own module so a heatmap mechanism's per-run jobs do not import the study (and with it the
config validator, jsonschema and yaml: about 0.1 s per job).
"""

from __future__ import annotations

from ..dp.record import ADD_REMOVE, REPLACE_ONE


def heatmap_guarantee(
    epsilon: float,
    achieved: float,
    aggregation: str = "population",
    non_private_inputs: str = "",
    variant: str = "honest_but_curious",
) -> dict:
    """The recorded guarantee of a distributed-DP heatmap run (dp_heatmap or a private baseline).

    Proof sketch: each sub-query releases a sum whose every entry carries independent
    discrete-Laplace noise P(z) ∝ exp(−ε_t |z| / Δ) (Pólya shares, Bagdasaryan et al. 2022
    Thm 4.2), so adding or removing one user — who changes the vector by L1 <= Δ — moves
    the log-likelihood by <= ε_t; basic composition over sub-queries gives Σ_t ε_t = ε.
    Replacing one user (n fixed) changes L1 by <= 2Δ, hence 2ε.  Dropouts beyond the plan
    leave less noise: ``achieved`` is Σ_t of the level the realised survivors give
    (exact, or the closed-form bound of ``polya.achieved_epsilon_bound``).  The server
    sees only the sum: ideal secure aggregation in the population and per-client modes,
    the masking protocol (computational; ``variant`` says against which server,
    ``locpriv.secagg.protocol``) in secure mode.  Against an active server the sum is over a
    set L of its choice with |L| > threshold · n per shard: it can withhold up to
    (1 − threshold) n shares of noise, which ``achieved`` (the simulated dropouts) does not cover.
    ``non_private_inputs`` names raw data a method used without accounting (the baselines
    that pick their tree level by MSE against the true population, as the paper evaluates
    them): the budget is still spent, but no epsilon is guaranteed (``guaranteed_epsilon`` None).

    What is guaranteed is the larger of the planned and the achieved level (issue 28: dropouts
    beyond the plan made the achieved ε larger than the planned one the record used to state),
    under the relation the DAG's heatmap mechanisms record for the same mechanism: n is public,
    so replace-one, ``guaranteed_epsilon`` = 2 max(ε, achieved); add/remove beside it
    (``guaranteed_epsilon_add_remove``).
    """
    worst = max(float(epsilon), float(achieved))
    sum_model = {
        "population": "ideal secure aggregation (simulated at population scale)",
        "per_client": "ideal secure aggregation of per-client vectors mod 2^bits",
        "secure": {
            "honest_but_curious": "pairwise-masking secure aggregation, honest-but-curious server "
            "(Bonawitz et al. 2017; Bell et al. 2020): a server that follows the protocol learns each "
            "shard's sum over its survivors only",
            "active": "pairwise-masking secure aggregation, active server (Bonawitz et al. 2017 "
            "with signatures and a consistency round; Bell et al. 2020): it learns at "
            "most one sum per shard over more than threshold x n clients of its "
            "choice (no client colludes with it)",
        }[variant],
    }[aggregation]
    return {
        "model": f"epsilon-DP per user, distributed discrete Laplace (Bagdasaryan et al. 2022 Thm 4.2), "
        f"basic composition over sub-queries; {sum_model}",
        "neighbouring": REPLACE_ONE,
        "other_relation": ADD_REMOVE,
        "epsilon": float(epsilon),
        "achieved_epsilon": float(achieved),
        "delta": 0.0,
        "non_private_inputs": non_private_inputs,
        "guaranteed_epsilon": None if non_private_inputs else 2 * worst,
        "guaranteed_epsilon_add_remove": None if non_private_inputs else worst,
    }
