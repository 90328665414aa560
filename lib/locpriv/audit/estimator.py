"""Empirical lower bound on the privacy loss between two output laws (black-box DP audit).

A mechanism M is (ε, δ)-DP for a pair of neighbouring inputs x, x′ when, for
every set S of outputs, P(M(x) ∈ S) ≤ e^ε P(M(x′) ∈ S) + δ (and symmetrically).
So any one event S with p = P(S | x), q = P(S | x′) proves ε ≥ log((p − δ) / q).
The audit estimates such a pair from draws (Jagielski et al. 2020; Nasr et al.
2021; the approach of Google's DP-Auditorium):

1. draw n outputs at x and n at x′ (the caller's samplers, one RNG stream each);
2. split both samples into three parts by index (draws are iid, so the split is
   independent of the values): the first quarter *builds* candidate events
   (quantile thresholds, categorical values, and the set of output values seen
   under one input but never under the other), the second quarter *scores*
   them (the bound of step 3 at the simultaneous level α / K over the K
   candidates), and the event with the best score is *tested* on the other
   half alone;
3. on the test half, with k successes out of m, take one-sided Clopper–Pearson
   bounds p_lo (lower, for the side the event favours) and q_hi (upper, for the
   other side), each at level α/2, and report

       ε_lb = max(0, log((p_lo − δ) / q_hi)) / d(x, x′)

   (d = 1 for ε-DP; d(x, x′) the metric for geo-indistinguishability).

Confidence statement: the event is a function of the build/score draws only,
hence independent of the test half, so P(p_lo ≤ p) ≥ 1 − α/2 and
P(q_hi ≥ q) ≥ 1 − α/2; by the union bound both hold with probability ≥ 1 − α,
and then ε_lb ≤ log((p − δ)/q)/d ≤ ε.  A correctly calibrated mechanism
therefore yields ε_lb ≤ ε except with probability ≤ α (5 % by default); with a
fixed seed the outcome is deterministic.  The bound is one-sided: a small
ε_lb proves nothing about privacy, a large one refutes the claim.

Candidate events, both directions (favouring x and favouring x′), over the
*features* of an output: its coordinates, any public post-processing the
case adds (e.g. a likelihood-ratio statistic), and the *granularity* of each
floating-point coordinate (the exponent of its lowest set bit).  Granularity
events are what catch the floating-point attack on textbook samplers (Mironov
2012): y = x + b·L rounded to doubles reaches sets of doubles that depend on x,
e.g. outputs near 0 carry bits below 2^-53 only when x = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# scipy.special, not scipy.stats (beta.ppf is the same boost ibeta_inv, the same bits): importing
# scipy.stats cost each audit job ~1 s of CPU
from scipy import special

ALPHA = 0.05
N_THRESHOLDS = 48  # quantile thresholds per feature
MAX_CATEGORIES = 64  # a feature with at most this many values also gets equality events
ZERO_GRANULARITY = 2048  # granularity of 0.0 (no set bit): above every double's


def cp_lower(k: np.ndarray, m: int, beta: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound at level 1 − beta for k successes in m trials."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        low = special.betaincinv(k, m - k + 1, beta)
    return np.where(k > 0, low, 0.0)


def cp_upper(k: np.ndarray, m: int, beta: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound at level 1 − beta for k successes in m trials."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        up = special.betaincinv(k + 1, m - k, 1 - beta)
    return np.where(k < m, up, 1.0)


def epsilon_bound(
    k_fav: np.ndarray, k_other: np.ndarray, m: int, delta: float = 0.0, alpha: float = ALPHA
) -> np.ndarray:
    """log((p_lo − δ) / q_hi), floored at 0, from counts of one event under both inputs (m draws each)."""
    p_lo = cp_lower(k_fav, m, alpha / 2)
    q_hi = cp_upper(k_other, m, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(np.maximum(p_lo - delta, 0.0) / q_hi)
    return np.maximum(np.nan_to_num(ratio, nan=0.0, neginf=0.0), 0.0)


def granularity(values: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of each double (value = odd integer × 2^g); 0.0 gets a large g."""
    values = np.asarray(values, dtype=np.float64)
    mant, expo = np.frexp(values)  # |mant| in [0.5, 1): 53 significant bits
    m = np.abs(mant * 2.0**53).astype(np.int64)
    low_bit = m & -m  # lowest set bit, as a power of two
    tz = np.log2(np.where(m > 0, low_bit, 1)).astype(np.int64)
    return np.where(m > 0, expo.astype(np.int64) - 53 + tz, ZERO_GRANULARITY).astype(float)


@dataclass(frozen=True)
class Event:
    """One candidate output set: feature j compared with a value, or membership in a value set."""

    feature: int
    kind: str  # "le", "gt", "eq", "in"
    value: float | np.ndarray
    favours: str  # "x" or "x'"

    def count(self, column: np.ndarray, ordered: np.ndarray) -> int:
        """Draws in the event; ``ordered`` is ``column`` sorted (thresholds by binary search)."""
        if self.kind == "in":
            return int(np.isin(column, self.value).sum())
        right = int(np.searchsorted(ordered, self.value, side="right"))
        if self.kind == "le":
            return right
        if self.kind == "gt":
            return len(ordered) - right
        return right - int(np.searchsorted(ordered, self.value, side="left"))

    def describe(self, names: list[str]) -> str:
        name = names[self.feature]
        if self.kind == "in":
            return f"{name} in {len(self.value)} values never seen under the other input (favours {self.favours})"
        op = {"le": "<=", "gt": ">", "eq": "=="}[self.kind]
        return f"{name} {op} {self.value:.6g} (favours {self.favours})"


@dataclass(frozen=True)
class AuditResult:
    epsilon_lb: float
    event: str
    k_x: int  # test-half draws in the event under x
    k_xp: int  # ... under x'
    m: int  # test-half draws per input
    confidence: float


def features(raw: np.ndarray, extra: np.ndarray | None) -> tuple[np.ndarray, list[str]]:
    """Columns the events look at: raw outputs, the case's statistics, granularity of float outputs."""
    raw = np.asarray(raw).reshape(len(raw), -1)
    cols = [raw.astype(float)]
    names = [f"y{j}" for j in range(raw.shape[1])]
    if extra is not None:
        extra = np.asarray(extra, dtype=float).reshape(len(raw), -1)
        cols.append(extra)
        names += [f"stat{j}" for j in range(extra.shape[1])]
    if np.issubdtype(raw.dtype, np.floating):
        cols.append(np.column_stack([granularity(raw[:, j]) for j in range(raw.shape[1])]))
        names += [f"granularity(y{j})" for j in range(raw.shape[1])]
    return np.column_stack(cols), names


def _candidates(bx: np.ndarray, bxp: np.ndarray) -> list[Event]:
    """Events built from the build quarter (bx under x, bxp under x′)."""
    events = []
    for j in range(bx.shape[1]):
        pooled = np.concatenate([bx[:, j], bxp[:, j]])
        levels = np.unique(pooled)
        if levels.size <= MAX_CATEGORIES:
            values = levels
            events += [Event(j, "eq", float(v), f) for v in levels for f in ("x", "x'")]
        else:
            values = np.unique(np.quantile(pooled, np.linspace(0, 1, N_THRESHOLDS + 2)[1:-1]))
        events += [Event(j, kind, float(t), f) for t in values for kind in ("le", "gt") for f in ("x", "x'")]
        only_x = np.setdiff1d(bx[:, j], bxp[:, j])
        only_xp = np.setdiff1d(bxp[:, j], bx[:, j])
        if only_x.size:
            events.append(Event(j, "in", only_x, "x"))
        if only_xp.size:
            events.append(Event(j, "in", only_xp, "x'"))
    return events


def _counts(events: list[Event], fx: np.ndarray, fxp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per event: (draws in it under the favoured input, under the other)."""
    sx, sxp = np.sort(fx, axis=0), np.sort(fxp, axis=0)
    kx = np.array([e.count(fx[:, e.feature], sx[:, e.feature]) for e in events])
    kxp = np.array([e.count(fxp[:, e.feature], sxp[:, e.feature]) for e in events])
    favours_x = np.array([e.favours == "x" for e in events])
    return np.where(favours_x, kx, kxp), np.where(favours_x, kxp, kx)


def audit_samples(
    out_x: np.ndarray,
    out_xp: np.ndarray,
    *,
    stat_x: np.ndarray | None = None,
    stat_xp: np.ndarray | None = None,
    delta: float = 0.0,
    distance: float = 1.0,
    alpha: float = ALPHA,
) -> AuditResult:
    """ε lower bound from n outputs at x and n at x′ (arrays (n,) or (n, k); see the module doc).

    ``stat_*``: optional public post-processing of each output (extra feature columns).
    """
    n = len(out_x)
    if len(out_xp) != n or n < 8:
        raise ValueError(f"need the same number (>= 8) of draws at x and x', got {n} and {len(out_xp)}")
    fx, names = features(out_x, stat_x)
    fxp, _ = features(out_xp, stat_xp)
    q1, q2 = n // 4, n // 2
    events = _candidates(fx[:q1], fxp[:q1])
    # scored at the simultaneous (Bonferroni) level over all candidates: among events with similar
    # ratios this prefers well-populated ones, whose held-out bound is tighter (less winner's curse)
    score = epsilon_bound(*_counts(events, fx[q1:q2], fxp[q1:q2]), q2 - q1, delta, alpha / len(events))
    best = events[int(np.argmax(score))]  # first of equal scores: deterministic
    (k_fav,), (k_other,) = _counts([best], fx[q2:], fxp[q2:])
    m = n - q2
    lb = float(epsilon_bound(k_fav, k_other, m, delta, alpha)) / distance
    kx, kxp = (int(k_fav), int(k_other)) if best.favours == "x" else (int(k_other), int(k_fav))
    return AuditResult(lb, best.describe(names), kx, kxp, m, 1.0 - alpha)


def audit(
    sample_x,
    sample_xp,
    draws: int,
    rng_x: np.random.Generator,
    rng_xp: np.random.Generator,
    statistic=None,
    delta: float = 0.0,
    distance: float = 1.0,
    alpha: float = ALPHA,
) -> AuditResult:
    """Draw ``draws`` outputs with each sampler (``sample(n, rng) -> (n, k)``) and bound ε from below."""
    if not math.isfinite(distance) or distance <= 0:
        raise ValueError(f"distance d(x, x') must be a finite number > 0, got {distance}")
    out_x, out_xp = sample_x(draws, rng_x), sample_xp(draws, rng_xp)
    stat = statistic or (lambda out: None)
    return audit_samples(
        out_x, out_xp, stat_x=stat(out_x), stat_xp=stat(out_xp), delta=delta, distance=distance, alpha=alpha
    )
