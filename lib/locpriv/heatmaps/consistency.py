"""Every sub-query's counts, combined: weighted least squares over the prefix tree.

The adaptive algorithm (``adaptive``) releases, in each sub-query t, noisy counts
y_t(v) of the regions its tree T_t's reporting nodes cover (a leaf's cell, a
partial node's orphaned area).  Reading the map from the last sub-query alone
throws the earlier ones away; this module estimates the counts from all of them
(Hay, Rastogi, Miklau, Suciu, VLDB 2010, "Boosting the accuracy of differentially
private histograms through consistency"; Qardaji, Yang, Li 2013 for weighting by
per-level budgets).

Model.  Let U be the union of the rounds' trees (closed under parents, so a prefix
tree).  Unknowns: c(u), the count of every node u of U, and o(u), the count of the
orphaned area of every node with 1-3 children in U; consistency constraints
c(u) = Σ_children c(child) [+ o(u)] for every node with children, and
c(root) = n (the number of users who reported, known to the server: it learns the
survivor set of every shard).  Round t's entry for reporting node v measures
c(v) − Σ_{children of v in T_t} c(child): four unknowns at most, whatever the
depth, so the system stays sparse.  Rounds sample n_t users each; their counts
are scaled to the last round's total (y_t n / n_t, variance (n / n_t)^2 s_t^2)
so every round estimates the same n p(region).  The estimate minimises
Σ_t Σ_v (y_t(v) − region_t(v))^2 / s_t^2 under the constraints (inverse-variance
weights; s_t^2 is the round's discrete-Laplace noise variance summed over its
shards), solved exactly through the sparse KKT system.

* Unbiased: the constraints hold for the true counts and the estimator is linear
  in y, so E[estimate] = truth whenever every noise has mean 0.
* Exact on noiseless counts: the true counts satisfy every equation.
* Identified: every node a split creates is a leaf of the next tree and is
  measured alone there, so every leaf of U (and the start tree's orphaned areas)
  has its own equation.
* Weights: discrete-Laplace variance only.  Under disjoint sampling each round
  also carries the sampling variance of its own users (about n p (1 − p) per
  region, the same in every round); it is ignored, so the weights are not the
  optimal ones then, but the estimate stays unbiased.  Under fixed sampling (one
  sample answers every sub-query) they are the generalised least-squares weights.
* Negative estimates are kept (consistency); ``render`` counts them as 0.

Privacy: pure post-processing.  The inputs are the released noisy sums, the
per-round budgets and the public survivor counts, which the server holds anyway;
a function of an ε-DP release is ε-DP (Dwork & Roth 2014, Prop. 2.1), so the
combined map costs nothing beyond the Σ_t ε_t the rounds already spent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse import linalg

from .prefix_tree import PrefixTree


@dataclass(frozen=True)
class TreeEstimate:
    tree: PrefixTree  # U, the union of the rounds' trees
    totals: np.ndarray  # c(u) for every node of U, in U's node order
    counts: np.ndarray  # one entry per reporting node of U (a leaf's c, a partial node's o)

    def on(self, tree: PrefixTree) -> np.ndarray:
        """Counts of ``tree``'s reporting regions (tree ⊆ U), e.g. the last round's partition."""
        return region_matrix(tree, self.tree) @ self.totals


def _index(tree: PrefixTree, levels, codes) -> np.ndarray:
    """Position of each (level, code) among ``tree``'s nodes (all must be present)."""
    keys = PrefixTree.node_keys(tree.levels, tree.codes)
    order = np.argsort(keys)
    query = PrefixTree.node_keys(levels, codes)
    pos = order[np.clip(np.searchsorted(keys[order], query), 0, len(keys) - 1)]
    if not np.array_equal(keys[pos], query):
        raise ValueError("a node is missing from the union tree")
    return pos


def region_matrix(tree: PrefixTree, union: PrefixTree) -> sparse.csr_matrix:
    """Rows: ``tree``'s reporting nodes v; columns: ``union``'s nodes; row v = e_v − Σ_{children of v in tree} e_child.

    Applied to node totals of ``union`` it gives the counts of the regions ``tree`` reports.
    """
    n_children = tree.n_children()
    reporting = n_children < 4
    row_of = np.full(len(tree.levels), -1)
    row_of[reporting] = np.arange(int(reporting.sum()))
    # a node's parent, as a row when the parent reports (a partial node subtracts its present children)
    child = tree.levels > 0
    parent = np.full(len(tree.levels), -1)
    parent[child] = _index(tree, tree.levels[child] - 1, tree.codes[child] >> 2)
    sub = child.copy()
    sub[child] = row_of[parent[child]] >= 0
    cols = _index(union, tree.levels, tree.codes)
    rows = np.concatenate([row_of[reporting], row_of[parent[sub]]])
    data = np.concatenate([np.ones(int(reporting.sum())), -np.ones(int(sub.sum()))])
    return sparse.csr_matrix(
        (data, (rows, np.concatenate([cols[reporting], cols[sub]]))), shape=(int(reporting.sum()), len(union.levels))
    )


def union_tree(trees: list[PrefixTree]) -> PrefixTree:
    nodes = np.unique(np.concatenate([np.stack([t.levels, t.codes], axis=1) for t in trees]), axis=0)
    return PrefixTree.from_nodes(trees[0].depth, nodes[:, 0], nodes[:, 1])


def least_squares(trees: list[PrefixTree], noisy: list[np.ndarray], variances, reported) -> TreeEstimate:
    """The constrained weighted least-squares counts from every round (module doc).

    ``trees[t]``, ``noisy[t]`` (one entry per reporting node of trees[t]; or one column per
    independent release of the same trees, shape (K_t, m), solved together), ``variances[t]``
    (noise variance of each entry) and ``reported[t]`` (users summed in round t) per round;
    counts are on the scale of the last round's total.
    """
    if not (len(trees) == len(noisy) == len(variances) == len(reported)) or not trees:
        raise ValueError("least_squares needs one tree, count vector, variance and user count per round")
    union = union_tree(trees)
    n_nodes = len(union.levels)
    total = float(reported[-1])
    blocks, rhs, weights = [], [], []
    for tree, y, var, n_t in zip(trees, noisy, variances, reported, strict=True):
        if not (np.isfinite(var) and var > 0 and n_t > 0):
            raise ValueError(f"each round needs a noise variance > 0 and a user count > 0, got {var}, {n_t}")
        scale = total / n_t
        blocks.append(region_matrix(tree, union))
        y = np.asarray(y, dtype=float)
        rhs.append(y.reshape(len(y), -1) * scale)
        weights.append(np.full(len(y), 1.0 / (var * scale * scale)))
    # unknowns: node totals, then one orphan count per partial node of U
    n_children = union.n_children()
    partial = np.flatnonzero((n_children > 0) & (n_children < 4))
    n_vars = n_nodes + len(partial)
    obs = sparse.hstack([sparse.vstack(blocks), sparse.csr_matrix((sum(b.shape[0] for b in blocks), len(partial)))])
    constraints = _constraints(union, partial, n_vars)
    weight = sparse.diags(np.concatenate(weights))
    gram = (obs.T @ weight @ obs).tocsc()
    kkt = sparse.bmat([[gram, constraints.T], [constraints, None]], format="csc")
    y = np.concatenate(rhs)
    known = np.zeros((constraints.shape[0], y.shape[1]))
    known[-1] = total
    solution = linalg.spsolve(kkt, np.concatenate([obs.T @ (weight @ y), known])).reshape(len(known) + n_vars, -1)
    if not np.isfinite(solution).all():
        raise ValueError("the rounds do not identify every region of the union tree (singular system)")
    totals = solution[:n_nodes]
    counts = np.where((n_children == 0)[:, None], totals, 0.0)
    counts[partial] = solution[n_nodes:n_vars]
    if all(np.ndim(v) == 1 for v in noisy):
        totals, counts = totals[:, 0], counts[:, 0]
    return TreeEstimate(union, totals, counts[n_children < 4])


def _constraints(union: PrefixTree, partial: np.ndarray, n_vars: int) -> sparse.csr_matrix:
    """Rows c(u) − Σ children c(child) [− o(u)] = 0 for every node with children, then c(root) = total."""
    child = np.flatnonzero(union.levels > 0)
    parent = _index(union, union.levels[child] - 1, union.codes[child] >> 2)
    internal = np.unique(parent)
    row_of = np.full(len(union.levels), -1)
    row_of[internal] = np.arange(len(internal))
    root = _index(union, np.array([0]), np.array([0]))
    rows = np.concatenate([row_of[internal], row_of[parent], row_of[partial], [len(internal)]])
    cols = np.concatenate([internal, child, len(union.levels) + np.arange(len(partial)), root])
    data = np.concatenate([np.ones(len(internal)), -np.ones(len(child)), -np.ones(len(partial)), [1.0]])
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(internal) + 1, n_vars))
