"""Illustrations of [RFF-KDE] §3.4-3.5: Fig. 3 (RFF KDE converges to KDE, 1-D) and
Fig. 4 (one user's response surfaces for several B).  Both are synthetic and
stochastic, so they take the Generator they draw from."""

from __future__ import annotations

import numpy as np

from . import figures
from .figures import plt
from .kde import kde_sum
from .rff import draw_users, rff_sum, rff_surfaces

# Fig. 3's mixture (§3.4): N(-10, 2^2), N(0, 2^2), N(5, 2^2) in ratio 1:3:1 on [-15, 15].
FIG3_MEANS = np.array([-10.0, 0.0, 5.0])
FIG3_WEIGHTS = np.array([1.0, 3.0, 1.0]) / 5
FIG3_SD = 2.0
# (samples, features) per panel: (a)/(b) few samples with 1 and 10 features; (c) trades
# features for samples (10x samples, 1 feature) to show they act alike; (d) both high.
FIG3_PANELS = ((500, 1), (500, 10), (5000, 1), (5000, 10))


def _rff_1d(x: np.ndarray, B: int, h: float, grid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """1-D eq. (6) as the 2-D machinery on the line y = 0: only w's x-component acts."""
    omega = draw_users(x.size, B, h, rng).omega0
    omega[..., 1] = 0.0
    total = rff_sum(omega, omega[..., 0] * x[:, None], grid, np.zeros(1))
    return total[:, 0] / (x.size * B)


def plot_fig3_convergence(*, path: str, rng: np.random.Generator, h: float = 1.0, dpi: int = 110) -> None:
    """Fig. 3: RFF KDE (eq. 6) beside exact KDE for the panels of FIG3_PANELS.

    The paper does not state Fig. 3's bandwidth; h = 1 (half the component sd) is ours.
    """
    grid = np.linspace(-15, 15, 1000)
    n_max = max(n for n, _ in FIG3_PANELS)
    comp = rng.choice(FIG3_MEANS.size, size=n_max, p=FIG3_WEIGHTS)
    sample = FIG3_MEANS[comp] + FIG3_SD * rng.standard_normal(n_max)
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4), sharex=True)
    for ax, (n, B), tag in zip(axes.ravel(), FIG3_PANELS, "abcd", strict=True):
        ax.set_ylabel("density [1/domain unit]")
        x = sample[:n]
        pts = np.column_stack([x, np.zeros(n)])
        exact = kde_sum(pts, grid, np.zeros(1), h)[:, 0] / n
        ax.plot(grid, exact, color="k", lw=2, label="KDE")
        ax.plot(grid, _rff_1d(x, B, h, grid, rng), color="tab:red", lw=1, label=f"RFF KDE, B={B}")
        ax.set_title(f"({tag}) N={n} samples, B={B} feature{'s' * (B > 1)}")
        ax.legend(fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("location x [domain units]")
    fig.suptitle(f"RFF KDE converges to KDE (1-D mixture 1:3:1 at -10, 0, 5, sd 2; h={h:g})")
    fig.tight_layout()
    figures.save(fig, path, dpi)


def plot_user_surfaces(
    *, path: str, rng: np.random.Generator, B_list=(1, 2, 8), h: float = 0.5, dpi: int = 110
) -> None:
    """Fig. 4 (2-D row): one user at the origin answering with its first B features.

    The user draws max(B_list) frequencies once and every panel uses a prefix of
    them, as a user answering queries for growing B would; grid 100 x 100 on [-5, 5]^2
    as in Fig. 2 (b).  The bandwidth is not stated for Fig. 4; h = 0.5 (Fig. 5 (c)) is ours.
    """
    if not B_list or min(B_list) < 1:
        raise ValueError(f"B_list must be a non-empty list of integers >= 1, got {B_list!r}")
    grid = np.linspace(-5, 5, 100)
    omega = draw_users(1, max(B_list), h, rng).omega0
    fig, axes = plt.subplots(1, len(B_list), figsize=(3.6 * len(B_list), 3.4), squeeze=False)
    for ax, B in zip(axes[0], B_list, strict=True):
        surf = rff_surfaces(omega[:, :B], np.zeros((1, B)), grid, grid)[0]
        im = ax.imshow(surf.T, origin="lower", extent=(-5, 5, -5, 5), cmap="viridis")
        ax.plot(0, 0, marker="x", color="r", ms=8)
        ax.set_title(f"B = {B}")
        ax.set_xlabel("x [domain units]")
        fig.colorbar(im, ax=ax, fraction=0.046).set_label("response: sum of B cosine features [no unit]")
    axes[0, 0].set_ylabel("y [domain units]")
    for ax in axes[0, 1:]:
        ax.tick_params(labelleft=False)
    fig.suptitle(f"One user's response surface at (0, 0) (x), h={h:g}")
    fig.tight_layout()
    figures.save(fig, path, dpi)
