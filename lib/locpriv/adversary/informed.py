"""The informed adversary: DP's own threat model, and the invariant that ties it to the guarantee.

Threat model (Shokri et al. 2011's framework with maximal background knowledge; the
adversary of the DP definition): for a target user t the adversary knows D₋ₜ, every
other user's exact location (and the persons' grouping), the mechanism, its
parameters and everything public (partitions, broadcasts, trees), and sees O, exactly
what the mechanism releases to parties it does not trust: the target's own view for a
local mechanism, each secure-aggregation shard's sum per round for a distributed one,
the published release for a central one.  Its likelihood is

    L(x) = P(O | D₋ₜ, target at x),

and its posterior on the grid is π(c) L(c) normalised (``bayes.posterior``, in log
space over the cells the prior allows).  This module holds the likelihood math of the
mechanisms whose release is not a per-user report (distributed heatmaps, PrivTree) or
whose per-user view holds more than today's likelihood reads (SLDP), as pure functions
of (release, others' data, grid); every function returns log-likelihoods.

Pieces.  Each likelihood here is constant on *pieces*, quadtree cells (level, code)
that tile the box (heatmap pixels, PrivTree leaves, the children of an SLDP region).
On a grid cell c the likelihood of a location uniform in c is the overlap-weighted
mixture L(c) = Σ_p |c ∩ p| / |c| · L(p) (``PieceMap``, ``pieces_on_grid``).

The invariant (``max_log_ratio``, ``check``).  With D₋ₜ known, L(x) / L(x′) is the
ratio of the output's probabilities under the neighbouring datasets (D₋ₜ, x) and
(D₋ₜ, x′), which an ε-DP guarantee under the replace-one (or any-two-inputs) relation
bounds by e^ε.  So for every attacked user, max over locations of log L − min over
locations of log L <= the recorded ε; for SLDP the pairs range over the user's privacy
region, for geo-indistinguishability log L(x) − log L(x′) <= ε d(x, x′).  The statistic
is taken over the pieces, i.e. over all pairs of *locations* (a grid cell's likelihood
is a convex combination of pieces', so pairs of grid cells give at most the same).
The likelihood reads the noise parameters the release itself records (e.g. each
round's ε_t, the sampler's scale), never the configured ε: a record whose own noise
parameters allow more than its ε fails the check; noise drawn weaker than the record
states does not (the likelihood reads the record, not the draws): that is the noise
check's (``locpriv.audit.noise``).  Tolerance ``ABS_TOL`` + ``REL_TOL`` × ε:
float rounding of sums of a few dozen terms of size <= ε (~1e-13), far below it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..domain import Grid
from ..heatmaps.prefix_tree import PrefixTree
from ..quadtree import cell_overlaps, interleave, prefix_counts

ABS_TOL = 1e-9  # nats
REL_TOL = 1e-9  # of the recorded epsilon


class InvariantViolation(RuntimeError):
    """The informed adversary's likelihood ratio exceeds what the recorded guarantee allows."""


class Others:
    """What the informed adversary knows of a run's users, loaded on first use (local mechanisms never need it).

    ``points``: user, x, y of every user of the run (the targets too), sorted by user;
    ``view``: the run's whole view (every user's row, ``attrs`` the release); ``memo(key, make)``:
    a value derived from them, made once per attack job (``make()`` on the first call).
    A target's own row serves only to take its contribution out of an aggregate (the others'
    counts are the total minus the target's), never as evidence about the target.
    """

    def __init__(self, points, view):
        self._load = {"points": points, "view": view}
        self._memo: dict = {}

    def memo(self, key, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def points(self) -> pd.DataFrame:
        return self.memo("points", self._load["points"])

    @property
    def view(self) -> pd.DataFrame:
        return self.memo("view", self._load["view"])

    def rows_of(self, users) -> np.ndarray:
        """Positions in ``points`` of the given users (every one must be a user of the run)."""
        ids = self.points["user"].to_numpy()
        pos = np.searchsorted(ids, np.asarray(users))
        if not (pos < len(ids)).all() or not np.array_equal(ids[np.minimum(pos, len(ids) - 1)], users):
            raise ValueError("informed adversary: a target is not among the run's users")
        return pos


def recorded_noise(view: pd.DataFrame, mechanism: str) -> dict:
    """The noise parameters the randomiser recorded in the view (``view.attrs["noise"]``)."""
    noise = view.attrs.get("noise")
    if noise is None:
        raise ValueError(
            f"{mechanism}: the view records no noise parameters (view.attrs['noise']); the "
            "likelihoods read the noise the release records, never the configured epsilon: "
            "pass the view as randomize returned it"
        )
    return noise


# ---- discrete Laplace ---------------------------------------------------------------------------


def dlap_shift_log_ratio(z, scale: float, shift: float) -> np.ndarray:
    """log p(z − shift) − log p(z) for the discrete Laplace law p(z) ∝ exp(−|z| / scale) on integers.

    = (|z| − |z − shift|) / scale: in [−shift/scale, shift/scale], +shift/scale for
    z >= shift, −shift/scale for z <= 0 (normalisers cancel).
    """
    z = np.asarray(z, dtype=float)
    return (np.abs(z) - np.abs(z - shift)) / scale


def dlap_log_tail(m, scale: float) -> np.ndarray:
    """log P(Z >= m) for integer m, Z discrete Laplace: P(Z = z) = (1 − q)/(1 + q) q^|z|, q = e^(−1/scale).

    m >= 1: P = q^m / (1 + q); m <= 0: P = 1 − q^(1 − m) / (1 + q) (symmetry), both in a
    form free of cancellation.
    """
    m = np.asarray(m, dtype=float)
    log_q = -1.0 / scale
    log1p_q = math.log1p(math.exp(log_q))
    upper = m * log_q - log1p_q
    with np.errstate(over="ignore"):
        lower = np.log1p(-np.exp(np.maximum(1.0 - m, 1.0) * log_q - log1p_q))  # 1 - m >= 1 where used
    return np.where(m >= 1, upper, lower)


# ---- pieces on the grid -------------------------------------------------------------------------


class PieceMap:
    """Quadtree cells tiling the box, as overlap fractions with the grid cells (a sparse (PQ, K) matrix)."""

    def __init__(self, level, code, grid: Grid):
        from scipy import sparse  # here: only the informed adversary of a piecewise release needs it

        ox, oy = cell_overlaps(np.asarray(level), np.asarray(code), grid.domain.as_list(), grid.x, grid.y)
        piece_x, cell_x = np.nonzero(ox)
        piece_y, cell_y = np.nonzero(oy)
        # every (x-overlap, y-overlap) pair of one piece: its rectangle of grid cells
        by_piece = np.bincount(piece_y, minlength=len(ox))
        starts = np.concatenate([[0], np.cumsum(by_piece)])
        reps = by_piece[piece_x]
        rows = np.repeat(np.arange(len(piece_x)), reps)
        within = np.arange(len(rows)) - np.repeat(np.cumsum(reps) - reps, reps)
        ys = starts[piece_x[rows]] + within
        piece = piece_x[rows]
        frac = ox[piece, cell_x[rows]] * oy[piece, cell_y[ys]]
        self.shape = grid.shape
        self.matrix = sparse.csr_matrix(
            (frac, (cell_x[rows] * grid.shape[1] + cell_y[ys], piece)), shape=(grid.shape[0] * grid.shape[1], len(ox))
        )

    def to_grid(self, log_values: np.ndarray) -> np.ndarray:
        """(n, K) log-likelihoods per piece → (n, P, Q) log-likelihoods of a location uniform in each grid cell."""
        return _log_mix(log_values, lambda w: (self.matrix @ w.T).T.reshape(len(w), *self.shape))


def pieces_on_grid(level: np.ndarray, code: np.ndarray, log_values: np.ndarray, grid: Grid) -> np.ndarray:
    """Per-user pieces: (n, k) levels, codes and log-likelihoods (k pieces each, -inf outside them) → (n, P, Q)."""
    n, k = log_values.shape
    ox, oy = cell_overlaps(np.asarray(level).ravel(), np.asarray(code).ravel(), grid.domain.as_list(), grid.x, grid.y)
    ox, oy = ox.reshape(n, k, -1), oy.reshape(n, k, -1)
    return _log_mix(log_values, lambda w: np.einsum("nkp,nkq,nk->npq", ox, oy, w))


def _log_mix(log_values: np.ndarray, mix) -> np.ndarray:
    """log mix(exp(log_values)), shifted by each row's maximum (rows all -inf stay -inf)."""
    top = log_values.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(mix(np.exp(log_values - top[:, None]))) + top[:, None, None]


# ---- distributed heatmaps ([DDP-Heatmaps]) ------------------------------------------------------


def reporting_node_of_pixels(levels: np.ndarray, codes: np.ndarray, depth: int) -> np.ndarray:
    """(4^depth,) index into (levels, codes) of the node each pixel (flat x · 2^depth + y) reports to.

    A pixel reports to its deepest prefix in the round's prefix tree, always a reporting
    node (``PrefixTree``); the tree is the reporting nodes and their ancestors (a node
    with four children has descendants that report).  Pixels of a deleted (collapsed)
    leaf have no node of their own and report to the nearest ancestor still in the tree,
    as the library encodes them.
    """
    levels, codes = np.asarray(levels, dtype=np.int64), np.asarray(codes, dtype=np.int64)
    nodes = [(levels, codes)]
    for up in range(1, depth + 1):
        keep = levels >= up
        nodes.append((levels[keep] - up, codes[keep] >> (2 * up)))
    all_nodes = np.unique(
        np.stack([np.concatenate([lv for lv, _ in nodes]), np.concatenate([c for _, c in nodes])], axis=1), axis=0
    )
    tree = PrefixTree.from_nodes(depth, all_nodes[:, 0], all_nodes[:, 1])
    side = 1 << depth
    x, y = np.divmod(np.arange(side * side), side)
    tree_levels, tree_codes = tree.reporting_nodes()
    node = tree.encode(x, y)
    return _index(levels, codes, tree_levels[node], tree_codes[node])


def heatmap_log_likelihood(
    rounds, shard_pixels: list[np.ndarray], target_shard: np.ndarray, target_pixel: np.ndarray, depth: int
) -> np.ndarray:
    """(n, 4^depth) log L per pixel for n targets, from what the aggregation server learns.

    ``rounds``: per sub-query t, its reporting nodes (``levels``, ``codes``), the shard
    sums ``sums`` (n_shards, K_t), ``epsilon`` ε_t, ``sensitivity`` Δ and the shards'
    Pólya ``r`` (``heatmaps.aggregation.ShardedRound``); ``shard_pixels[j]``: the flat
    pixels of every user of shard j (target included); a target i is in shard
    ``target_shard[i]`` at pixel ``target_pixel[i]``.

    Derivation.  In sub-query t the server learns every shard's sum S_{j,t} = H_{j,t} +
    N_{j,t}: H the one-hot histogram of the shard's users over the round's reporting
    nodes, N the sum of their Pólya shares, discrete Laplace with a = exp(−ε_t/Δ) per
    entry when r_j = 1 (``polya``), independent over entries, shards and rounds.  The
    tree of round t is a function of the earlier rounds' sums (public), so by the
    chain rule P(O | D₋ₜ, x) = Π_t P(S_t | tree_t, D₋ₜ, x); shards other than the
    target's do not depend on x.  Knowing the others, the adversary forms the residual
    R_t = S_{j,t} − H^{others}_{j,t} = e_{node_t(x)} + N_{j,t}, so

        log L(x) = Σ_t [log p_t(R_t[node_t(x)] − 1) − log p_t(R_t[node_t(x)])] + const

    (every other entry's factor is free of x), p_t discrete Laplace of scale Δ/ε_t:
    each term is ±ε_t/Δ.  node_t(x) is the reporting node holding x's pixel
    (``reporting_node_of_pixels``).  H^{others} = H − e_{node_t(true pixel)}: the same
    numbers the adversary computes from the others' locations.
    """
    side = 1 << depth
    target_shard = np.asarray(target_shard, dtype=np.int64)
    target_pixel = np.asarray(target_pixel, dtype=np.int64)
    log_lik = np.zeros((len(target_shard), side * side))
    for rnd in rounds:
        r = np.asarray(rnd.r, dtype=float)
        if not np.all(r == 1.0):
            raise ValueError(
                f"the informed heatmap likelihood needs every shard's noise to be one discrete "
                f"Laplace (Pólya r = 1: full shards, no dropout), got r = {r.tolist()}"
            )
        node, noise = shard_noise(rnd, shard_pixels, depth)
        residual = noise[target_shard].astype(float)
        residual[np.arange(len(target_pixel)), node[target_pixel]] += 1.0
        term = dlap_shift_log_ratio(residual, rnd.sensitivity / rnd.epsilon, 1.0)
        log_lik += term[:, node]
    return log_lik


def heatmap_pair_log_ratio(rounds, other_codes: np.ndarray, pair_codes, depth: int) -> float:
    """log P(O | others, a user at pair_codes[0]) − log P(O | others, a user at pair_codes[1]) for a population in
    one shard: ``heatmap_log_likelihood``'s value at the first pixel minus at the second, evaluated at those
    two pixels only (each round's reporting node of a pixel is its deepest prefix among the round's nodes, as
    ``reporting_node_of_pixels`` places it); ``other_codes``/``pair_codes``: full-depth quadtree codes."""
    pixels, counts = np.unique(np.asarray(other_codes, dtype=np.int64), return_counts=True)
    query = np.concatenate([np.asarray(pair_codes, dtype=np.int64), pixels])
    total = 0.0
    for rnd in rounds:
        sums, levels = np.asarray(rnd.sums, dtype=np.int64), np.asarray(rnd.levels, dtype=np.int64)
        if sums.shape[0] != 1 or not np.all(np.asarray(rnd.r, dtype=float) == 1.0):
            raise ValueError(f"the pair ratio needs one full shard (Pólya r = 1), got r = {np.asarray(rnd.r).tolist()}")
        prefix = query[:, None] >> (2 * (depth - levels[None, :]))
        node = np.argmax(np.where(prefix == np.asarray(rnd.codes)[None, :], levels[None, :], -1), axis=1)
        others = np.bincount(node[2:], weights=counts, minlength=sums.shape[1])
        term = dlap_shift_log_ratio(sums[0, node[:2]] - others[node[:2]], rnd.sensitivity / rnd.epsilon, 1.0)
        total += float(term[0] - term[1])
    return total


def shard_noise(rnd, shard_pixels: list[np.ndarray], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """One sub-query's reporting node of every pixel (``reporting_node_of_pixels``) and its noise: each shard's
    sums minus its users' exact histogram over the round's reporting nodes (n_shards, K_t)."""
    node = reporting_node_of_pixels(rnd.levels, rnd.codes, depth)
    sums = np.asarray(rnd.sums, dtype=np.int64)
    return node, sums - np.stack([np.bincount(node[pixels], minlength=sums.shape[1]) for pixels in shard_pixels])


def pixel_pieces(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(levels, codes) of the 4^depth pixels in flat order x · 2^depth + y."""
    side = 1 << depth
    x, y = np.divmod(np.arange(side * side), side)
    return np.full(side * side, depth), interleave(x, y, depth)


# ---- PrivTree (central) -------------------------------------------------------------------------


class PrivTreeLikelihood:
    """The informed adversary's likelihood of one PrivTree release, for any number of targets.

    ``level``, ``code``, ``count``: the K released leaves (they tile the box; the tree is
    them and their ancestors); ``noise``: the curator's parameters in grid steps
    (``sldp.privtree.noise_parameters``, as the release records them); ``paths``: every
    user's full-depth quadtree code (depth ``noise["max_depth"]``, targets included).

    Derivation.  Each node v of the tree is split iff b(c_v) + Z_v > θ, with
    b(c) = max(c U − d(v) δ, θ − δ) in steps (U steps per count), Z_v discrete Laplace of
    scale λ (``split_scale``), independent over nodes; a node at ``max_depth`` stops
    without a draw.  Each leaf's count is released as c_ℓ U + Z′_ℓ steps, Z′ discrete
    Laplace of scale ``count_scale``.  The tree's structure is implied by its leaves:
    internal nodes were split, leaves stopped.  With the others' counts o_v known and
    the target at x, c_v = o_v + 1 exactly on the nodes of x's path (root to the leaf
    holding x), and o_v elsewhere, so the factors off the path are free of x and

        log L(x) = Σ_{v on path(x)} [log P(dec_v | o_v + 1) − log P(dec_v | o_v)]
                   + log p′(y_ℓ − (o_ℓ + 1) U) − log p′(y_ℓ − o_ℓ U) + const,

    P(split | c) = P(Z >= θ − b(c) + 1), P(stop | c) = P(Z <= θ − b(c)) (``dlap_log_tail``),
    y_ℓ the released count in steps.  Where b is clamped at θ − δ the decision term is 0
    (PrivTree's bias makes deep nodes' decisions free of one point).  The others' counts
    are o_v = H_v − 1{the target's true path holds v}, H the counts of all users.

    Computation.  Everything but the target's own path is done once: each node's term at
    H (``base``) and its change at H − 1 (``on_path``), each leaf's sum of ``base`` along its
    path.  A target's true path v_0 (root) ... v_J (its leaf) adds C_k = Σ_{j <= k}
    on_path[v_j] to every leaf under v_k but under no v_{k+1}, i.e. under a sibling of
    v_{k+1} (``C_J`` to v_J itself), so ``leaf_values`` is the per-leaf sum and
    ``on_grid`` mixes per-node grid maps of the leaves below (``PieceMap``) with those
    J + 1 sets of weights: about P Q operations per target, whatever the number of leaves.
    """

    def __init__(self, level, code, count, noise: dict, paths):
        level = np.asarray(level, dtype=np.int64)
        code = np.asarray(code, dtype=np.int64)
        self.depth = int(noise["max_depth"])
        y = np.rint(np.asarray(count, dtype=float) / float(noise["step"]))
        top_level = int(level.max(initial=0))
        # every node: the leaves and their ancestors, sorted by (level, code)
        node_level = np.concatenate([level - up for up in range(top_level + 1)])
        node_code = np.concatenate([code >> (2 * up) for up in range(top_level + 1)])
        keep = node_level >= 0
        nodes = np.unique(np.stack([node_level[keep], node_code[keep]], axis=1), axis=0)
        n_level, n_code = nodes[:, 0], nodes[:, 1]
        self.n_level, self.n_code, self.level, self.code = n_level, n_code, level, code
        self.find = find = _Lookup(n_level, n_code)
        is_leaf = np.isin(_key(n_level, n_code), _key(level, code))
        total = self.node_counts(paths)  # H_v: every user, the targets too
        leaf_of_node = np.full(len(nodes), -1)
        leaf_of_node[is_leaf] = _index(level, code, n_level[is_leaf], n_code[is_leaf])

        node_y = np.full(len(nodes), np.nan)
        node_y[is_leaf] = y[leaf_of_node[is_leaf]]

        def node_terms(others: np.ndarray, shift: int = 1) -> np.ndarray:
            """Each node's log P(its release | others + shift) − log P(its release | others)."""
            return privtree_node_log_ratio(n_level, is_leaf, node_y, others, noise, shift)

        self.node_terms, self.total = node_terms, total
        base = node_terms(total)  # as if the target were in no node
        self.on_path = node_terms(total - 1) - base  # the change where the target's true path holds the node
        # each node's sum of base along its path from the root: a leaf's log-likelihood without the target
        prefix = np.zeros(len(nodes))
        for up in range(top_level + 1):
            has = n_level >= up
            prefix[has] += base[find(n_level[has] - up, n_code[has] >> (2 * up))]
        self.leaf_node = find(level, code)  # the K leaves among the nodes
        self.leaf_base = prefix[self.leaf_node]
        # children (-1 where absent: a leaf has none, an internal node all four) and subtree extremes
        self.child = np.full((len(nodes), 4), -1)
        internal = np.flatnonzero(~is_leaf)
        for d in range(4):
            self.child[internal, d] = find(n_level[internal] + 1, (n_code[internal] << 2) | d)
        self.sub_max, self.sub_min = prefix.copy(), prefix.copy()
        for lv in range(top_level - 1, -1, -1):  # bottom-up: an internal node's extremes are its children's
            at = np.flatnonzero((n_level == lv) & ~is_leaf)
            self.sub_max[at] = self.sub_max[self.child[at]].max(axis=1)
            self.sub_min[at] = self.sub_min[self.child[at]].min(axis=1)
        self._grid = self._anc = None

    def node_counts(self, paths) -> np.ndarray:
        """How many of the given full-depth codes every node holds (int64, the nodes' order)."""
        return prefix_counts(paths, self.n_level, self.n_code, self.depth)

    def person_values(self, person_paths: list[np.ndarray]) -> np.ndarray:
        """(n, K) log L per released leaf of the hypothesis "all k of the person's rows in that leaf", for n
        persons (``person_paths[i]``: the full-depth codes of person i's k rows in the run).

        The unit of DP for a person is all their rows: the adversary knows every other person's
        rows exactly, and the hypothesis space is the person's rows placed together, k rows at
        one location x (a neighbour of the true dataset under the person-level relation: replace
        the person's k <= cap rows).  With o_v = H_v − n_v the others' counts (n_v the person's
        true rows in v), the k rows add k to the counts of the nodes on path(x) only, so, as for
        one user with 1 replaced by k,

            log L(x) = Σ_{v on path(x)} [log P(dec_v | o_v + k) − log P(dec_v | o_v)]
                       + log p′(y_ℓ − (o_ℓ + k) U) − log p′(y_ℓ − o_ℓ U) + const.

        Summing the rows' one-user likelihoods instead (each row's with the person's other rows
        at their true places) is not the likelihood of any hypothesis: it counts the person's
        other rows as known, which a person-level adversary does not know.  Why this family: it
        is the person model of every other adversary here (a person stays in one cell), it is
        exact for it (every term, nothing dropped), and it costs O(nodes · depth) per person; a
        family holding the true rows (e.g. the person's trajectory translated to each cell)
        would change up to k paths per hypothesis, O(P Q k depth) per person.  The statistic
        (max − min over leaves) is a log-ratio between two datasets that differ in the person's
        k rows, so group privacy bounds it by k times the replace-one epsilon.
        """
        anc = self._leaf_ancestors()
        out = np.empty((len(person_paths), len(self.level)))
        for i, paths in enumerate(person_paths):
            terms = self.node_terms(self.total - self.node_counts(paths), len(paths))
            out[i] = np.where(anc >= 0, terms[np.maximum(anc, 0)], 0.0).sum(axis=1)
        return out

    def _leaf_ancestors(self) -> np.ndarray:
        """(K, depth + 1): each leaf's node at every level from the root (-1 below the leaf), made once."""
        if self._anc is None:
            up = np.arange(int(self.n_level.max(initial=0)) + 1)
            has = self.level[:, None] >= up[None, :]
            shift = 2 * np.maximum(self.level[:, None] - up[None, :], 0)
            self._anc = np.full(has.shape, -1)
            self._anc[has] = self.find(np.broadcast_to(up, has.shape)[has], (self.code[:, None] >> shift)[has])
        return self._anc

    def _path(self, target_paths) -> tuple[np.ndarray, np.ndarray]:
        """(n, depth + 1) node index of each target's true path at every level (-1 below its leaf), and the
        cumulative corrections C (n, depth + 1) along it."""
        target_paths = np.asarray(target_paths, dtype=np.int64)
        top = int(self.n_level.max(initial=0))
        path = np.full((len(target_paths), top + 1), -1)
        for lv in range(top + 1):
            path[:, lv] = self.find(np.full(len(target_paths), lv), target_paths >> (2 * (self.depth - lv)), missing=-1)
        correction = np.cumsum(np.where(path >= 0, self.on_path[np.maximum(path, 0)], 0.0), axis=1)
        return path, correction

    def _rings(self, target_paths):
        """Per target: (node, C) pairs whose subtrees' leaves get C: every sibling of the path's next node,
        and the target's own leaf."""
        path, correction = self._path(target_paths)
        rows, nodes, values = [], [], []
        for lv in range(path.shape[1]):
            here = np.flatnonzero(path[:, lv] >= 0)
            nxt = path[here, lv + 1] if lv + 1 < path.shape[1] else np.full(len(here), -1)
            is_leaf = nxt < 0
            leaf = here[is_leaf]  # the path ends here: the leaf itself
            rows.append(leaf)
            nodes.append(path[leaf, lv])
            values.append(correction[leaf, lv])
            inner = here[~is_leaf]
            kids = self.child[path[inner, lv]]  # (m, 4)
            sibling = kids != nxt[~is_leaf][:, None]
            rows.append(np.repeat(inner, 3))
            nodes.append(kids[sibling])
            values.append(np.repeat(correction[inner, lv], 3))
        return np.concatenate(rows), np.concatenate(nodes), np.concatenate(values)

    def leaf_values(self, target_paths) -> np.ndarray:
        """(n, K) log L per released leaf (the leaves' order as given)."""
        rows, nodes, values = self._rings(target_paths)
        start = self.code << (2 * (self.depth - self.level))  # sorted, the leaves tile the box
        order = np.argsort(start)
        first = start[order]
        lo = np.searchsorted(first, self.n_code[nodes] << (2 * (self.depth - self.n_level[nodes])), "left")
        hi = np.searchsorted(first, (self.n_code[nodes] + 1) << (2 * (self.depth - self.n_level[nodes])), "left")
        diff = np.zeros((len(np.asarray(target_paths)), len(self.level) + 1))
        np.add.at(diff, (rows, lo), values)
        np.add.at(diff, (rows, hi), -values)
        out = np.empty_like(diff[:, :-1])
        out[:, order] = np.cumsum(diff, axis=1)[:, :-1]
        return out + self.leaf_base

    def statistic(self, target_paths) -> np.ndarray:
        """(n,): max − min of log L over the leaves (the subtree extremes of each ring, shifted by its C)."""
        return self._statistic(len(np.asarray(target_paths)), *self._rings(target_paths))

    def evaluate(self, target_paths, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
        """``on_grid`` and ``statistic`` of the same targets."""
        rings = self._rings(target_paths)
        n = len(np.asarray(target_paths))
        return self._on_grid(n, grid, *rings), self._statistic(n, *rings)

    def _statistic(self, n, rows, nodes, values) -> np.ndarray:
        high = np.full(n, -np.inf)
        low = np.full(n, np.inf)
        np.maximum.at(high, rows, self.sub_max[nodes] + values)
        np.minimum.at(low, rows, self.sub_min[nodes] + values)
        return high - low

    def on_grid(self, target_paths, grid: Grid) -> np.ndarray:
        """(n, P, Q) log L of a location uniform in each grid cell (``PieceMap``'s mixture of the leaves)."""
        return self._on_grid(len(np.asarray(target_paths)), grid, *self._rings(target_paths))

    def _on_grid(self, n, grid, rows, nodes, values) -> np.ndarray:
        from scipy import sparse

        maps, shift = self._node_maps(grid)
        top = np.full(n, -np.inf)
        np.maximum.at(top, rows, values)
        weights = sparse.csr_matrix((np.exp(values - top[rows]), (nodes, rows)), shape=(maps.shape[1], n))
        mixed = np.asarray((maps @ weights).todense()).T.reshape(n, *grid.shape)
        with np.errstate(divide="ignore"):
            return np.log(mixed) + (top + shift)[:, None, None]

    def _node_maps(self, grid: Grid):
        """Per node, the grid map (a sparse (PQ, nodes) matrix) of exp(leaf_base − shift) over the leaves below
        it, and the shift; made once per grid."""
        from scipy import sparse

        key = (grid.shape, grid.domain)
        if self._grid is None or self._grid[0] != key:
            shift = float(self.leaf_base.max())
            leaves = PieceMap(self.level, self.code, grid).matrix @ sparse.diags(np.exp(self.leaf_base - shift))
            up = np.arange(int(self.level.max(initial=0)) + 1)
            has = self.level[:, None] >= up[None, :]
            leaf = np.broadcast_to(np.arange(len(self.level))[:, None], has.shape)[has]
            ancestor = self.find(
                (self.level[:, None] - up[None, :])[has], (self.code[:, None] >> (2 * up[None, :]))[has]
            )
            below = sparse.csr_matrix(
                (np.ones(len(leaf)), (leaf, ancestor)), shape=(len(self.level), len(self.n_level))
            )
            self._grid = (key, sparse.csc_matrix(leaves @ below), shift)
        return self._grid[1], self._grid[2]


def privtree_node_log_ratio(node_level, is_leaf, y, others, noise: dict, shift: int = 1) -> np.ndarray:
    """Per released node: log P(its release | others + shift) − log P(its release | others)
    (``PrivTreeLikelihood``'s derivation): its split decision's (none at ``max_depth``) and, for a leaf, its
    count's (``y``: the released count in steps, ignored elsewhere); ``others``: the node's count without
    the ``shift`` users."""
    unit, delta, theta = int(noise["unit"]), int(noise["delta"]), int(noise["theta"])
    split_scale = float(noise["split_scale"])

    def log_p(c):
        b = np.maximum(c * unit - node_level * delta, theta - delta)
        return np.where(is_leaf, dlap_log_tail(b - theta, split_scale), dlap_log_tail(theta - b + 1, split_scale))

    term = np.where(node_level < int(noise["max_depth"]), log_p(others + shift) - log_p(others), 0.0)
    term[is_leaf] += dlap_shift_log_ratio(
        y[is_leaf] - others[is_leaf] * unit, float(noise["count_scale"]), unit * shift
    )
    return term


def privtree_path_log_ratio(level, code, count, noise: dict, paths, target_paths) -> np.ndarray:
    """(n,): log P(release | the users of ``paths`` and one more at each target) − log P(release | those users),
    for n targets (full-depth codes): ``privtree_node_log_ratio`` summed over the nodes of the target's path
    (root to the released leaf holding it), every other node's factor being free of the target.  The same
    value as ``PrivTreeLikelihood.leaf_base`` at the target's leaf, without building the whole tree's model."""
    level, code = np.asarray(level, dtype=np.int64), np.asarray(code, dtype=np.int64)
    depth = int(noise["max_depth"])
    target_paths = np.asarray(target_paths, dtype=np.int64)
    holds = code[None, :] == target_paths[:, None] >> (2 * (depth - level[None, :]))  # the leaves tile the box
    leaf = np.argmax(holds, axis=1)
    out = np.empty(len(target_paths))
    for i, (path, own) in enumerate(zip(target_paths, leaf, strict=True)):
        node_level = np.arange(level[own] + 1)
        node_code = path >> (2 * (depth - node_level))
        is_leaf = node_level == level[own]
        y = np.where(is_leaf, np.rint(float(count[own]) / float(noise["step"])), np.nan)
        others = prefix_counts(paths, node_level, node_code, depth)
        out[i] = privtree_node_log_ratio(node_level, is_leaf, y, others, noise).sum()
    return out


def privtree_log_likelihood(
    level: np.ndarray, code: np.ndarray, count: np.ndarray, noise: dict, paths: np.ndarray, target_paths: np.ndarray
) -> np.ndarray:
    """(n, K) log L per released leaf for n targets (``PrivTreeLikelihood``, its derivation)."""
    return PrivTreeLikelihood(level, code, count, noise, paths).leaf_values(target_paths)


def _key(level, code) -> np.ndarray:
    return (np.asarray(code, dtype=np.int64) << 6) | np.asarray(level, dtype=np.int64)


class _Lookup:
    """Positions of quadtree nodes among a fixed set (levels, codes), sorted once."""

    def __init__(self, levels, codes):
        keys = _key(levels, codes)
        self.order = np.argsort(keys)
        self.keys = keys[self.order]

    def __call__(self, query_levels, query_codes, missing=None) -> np.ndarray:
        """``missing`` where a node is absent (None: every one must be present)."""
        query = _key(query_levels, query_codes)
        pos = np.clip(np.searchsorted(self.keys, query), 0, len(self.keys) - 1)
        found = self.keys[pos] == query
        if missing is None:
            if not found.all():
                raise ValueError("a node is missing from the tree")
            return self.order[pos]
        return np.where(found, self.order[pos], missing)


def _index(levels, codes, query_levels, query_codes, missing=None) -> np.ndarray:
    """Positions of the nodes (query_levels, query_codes) among (levels, codes) (``_Lookup`` for one query)."""
    return _Lookup(levels, codes)(query_levels, query_codes, missing)


# ---- SLDP ---------------------------------------------------------------------------------------


def sldp_pieces(
    level: np.ndarray, code: np.ndarray, offsets: np.ndarray, steps: np.ndarray, scale: float, unit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per user: 4 pieces (levels, codes) and their log L, each (n, 4), from its region and its reports.

    ``level``, ``code``: each user's privacy region; its reports ``steps[offsets[u]:offsets[u+1]]``,
    4 per round answered, in grid steps (``sldp.protocol.UserReports``); ``scale``: their
    discrete Laplace scale in steps; ``unit``: steps per indicator (1 / INDICATOR_STEP).

    Derivation.  In round r a user in cell u_{r−1} (level r − 1) sends, for the four
    children k of u_{r−1}, y_k = U 1{x in child k} + Z_k, Z_k iid discrete Laplace; the
    server sees which cell's children it answered for, i.e. the user's path, and the view
    holds the user's region (SLDP reveals it; Thm 4.1 protects the location inside it
    only): L(x) = 0 outside the region.  Inside
    the region every round's child is fixed by the region, except when the user stopped
    *at* the region (its parent rule: the region's children were all or partly sparse) after
    answering for the region's children (rounds answered = region level + 1): then
    x's child k of the region enters, P(y | k) ∝ Π_j p(y_j − U 1{j = k}) ∝ p(y_k − U) / p(y_k),
    so log L = dlap_shift_log_ratio(y_k) on child k.  Otherwise (rounds answered = region
    level) L is uniform on the region.  The split decisions are functions of all users'
    reports, the target's included, so they add nothing.  The others' data do not enter.
    The four pieces are the region's children either way (equal values when uniform).
    """
    level = np.asarray(level, dtype=np.int64)
    code = np.asarray(code, dtype=np.int64)
    rounds = np.diff(np.asarray(offsets, dtype=np.int64)) // 4
    at_region = rounds == level + 1
    if not np.all(at_region | (rounds == level)):
        bad = int(np.flatnonzero(~(at_region | (rounds == level)))[0])
        raise ValueError(
            f"user row {bad}: {int(rounds[bad])} rounds of reports do not fit a region at level "
            f"{int(level[bad])} (expected the level or one more)"
        )
    last = np.asarray(offsets[1:], dtype=np.int64)[:, None] - 4 + np.arange(4)
    values = np.where(
        at_region[:, None], dlap_shift_log_ratio(np.asarray(steps)[np.maximum(last, 0)], scale, unit), 0.0
    )
    return (np.repeat(level[:, None] + 1, 4, axis=1), (code[:, None] << 2) | np.arange(4), values)


# ---- the invariant ------------------------------------------------------------------------------


def max_log_ratio(log_values: np.ndarray) -> np.ndarray:
    """(n,): max − min of each row's log-likelihood (over pieces or grid cells); inf if a row rules a location out."""
    flat = log_values.reshape(len(log_values), -1)
    return flat.max(axis=1) - flat.min(axis=1)


def check(statistic: np.ndarray, epsilon: float, *, mechanism: str, run: str, users: np.ndarray, relation: str) -> None:
    """Raise InvariantViolation (one line: mechanism, run, first user) where statistic > ε (+ tolerance)."""
    bound = epsilon * (1 + REL_TOL) + ABS_TOL
    bad = np.flatnonzero(~(np.asarray(statistic) <= bound))
    if bad.size:
        i = int(bad[0])
        raise InvariantViolation(
            f"informed-adversary invariant violated: mechanism {mechanism}, run {run}, user {int(users[i])}: "
            f"max log likelihood ratio {float(statistic[i]):.6g} > recorded epsilon {epsilon:.6g} ({relation}); "
            f"{bad.size} of {len(statistic)} attacked users exceed it"
        )
