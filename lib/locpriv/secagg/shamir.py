"""Shamir t-of-n secret sharing (Shamir 1979) of byte strings, vectorised over owners and holders.

Field: GF(p), p = 2^31 − 1 (a Mersenne prime), so a product of two field elements
fits an int64 and every step is a numpy array operation (no Python loop per share).
A 32-byte secret does not fit one element, so it is cut into ``LIMB_BITS``-bit limbs
(< p) and each limb is shared with its own independent random polynomial of degree
t − 1 at the same x-coordinates.  Security is per limb and the polynomials are
independent, so any t − 1 shares are uniform and independent of the whole secret
(information-theoretic, as in Shamir 1979); t shares determine every limb by
Lagrange interpolation at x = 0.

Shares carry no integrity check: a wrong share silently yields a wrong secret.
``reconstruct`` can cross-check when more than t shares are at hand
(``verify=True``): every (t + 1)-th share must lie on the interpolated polynomial.
"""

from __future__ import annotations

import numpy as np

PRIME = (1 << 31) - 1
LIMB_BITS = 24
LIMB_BYTES = LIMB_BITS // 8


class ShareError(ValueError):
    """Shares that are too few or do not lie on one polynomial."""


def n_limbs(n_bytes: int) -> int:
    return -(-n_bytes // LIMB_BYTES)


def to_limbs(secrets: np.ndarray) -> np.ndarray:
    """(R, B) uint8 secrets -> (R, L) int64 limbs, little-endian, each < 2^24."""
    secrets = np.asarray(secrets, dtype=np.uint8)
    rows, width = secrets.shape
    padded = np.zeros((rows, n_limbs(width) * LIMB_BYTES), dtype=np.int64)
    padded[:, :width] = secrets
    chunks = padded.reshape(rows, -1, LIMB_BYTES)
    return (chunks << (8 * np.arange(LIMB_BYTES))).sum(axis=2)


def from_limbs(limbs: np.ndarray, n_bytes: int) -> np.ndarray:
    """Inverse of ``to_limbs``; a limb >= 2^24 (a wrong reconstruction) is an error."""
    limbs = np.asarray(limbs, dtype=np.int64)
    if (limbs >> LIMB_BITS).any():
        raise ShareError("reconstructed value is not a valid secret encoding (inconsistent shares)")
    out = (limbs[..., None] >> (8 * np.arange(LIMB_BYTES))) & 0xFF
    return out.reshape(limbs.shape[0], -1)[:, :n_bytes].astype(np.uint8)


def _mulmod(a, b):
    return (np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)) % PRIME


def _powmod(base: np.ndarray, exponent: int) -> np.ndarray:
    result = np.ones_like(base, dtype=np.int64)
    base = np.asarray(base, dtype=np.int64) % PRIME
    while exponent:
        if exponent & 1:
            result = _mulmod(result, base)
        base = _mulmod(base, base)
        exponent >>= 1
    return result


def inverse(values: np.ndarray) -> np.ndarray:
    """Multiplicative inverses in GF(p) by Fermat (values must be non-zero mod p)."""
    return _powmod(values, PRIME - 2)


def share(secrets: np.ndarray, xs: np.ndarray, threshold: int, random_field) -> np.ndarray:
    """Shares of each owner's secret at its holders' x-coordinates.

    secrets: (R, B) uint8, one row per owner; xs: (R, H) int64 in [1, p), the holders'
    public x-coordinates per owner.  Returns (R, H, L) int64: share of limb l of
    owner r held by holder h.  ``random_field(shape)`` supplies the polynomial
    coefficients, uniform on GF(p) (``crypto.random_field``).
    """
    xs = np.asarray(xs, dtype=np.int64)
    if not 1 <= threshold <= xs.shape[1]:
        raise ShareError(f"threshold must be in [1, {xs.shape[1]}] (holders per owner), got {threshold}")
    if (xs < 1).any() or (xs >= PRIME).any():
        raise ShareError(f"x-coordinates must be in [1, {PRIME})")
    limbs = to_limbs(secrets)  # (R, L)
    coeffs = np.asarray(random_field((threshold - 1, *limbs.shape)), dtype=np.int64)
    # Horner from the top coefficient down: a loop over the degree only
    acc = np.zeros((xs.shape[0], xs.shape[1], limbs.shape[1]), dtype=np.int64)
    for c in coeffs[::-1]:
        acc = (_mulmod(acc, xs[:, :, None]) + c[:, None, :]) % PRIME
    return (_mulmod(acc, xs[:, :, None]) + limbs[:, None, :]) % PRIME


def lagrange_at_zero(xs: np.ndarray) -> np.ndarray:
    """(R, t) x-coordinates -> (R, t) Lagrange weights λ_j = Π_{i≠j} x_i / (x_i − x_j) mod p."""
    xs = np.asarray(xs, dtype=np.int64) % PRIME
    t = xs.shape[1]
    num = np.ones_like(xs)
    den = np.ones_like(xs)
    for i in range(t):  # a loop over the threshold, vectorised over owners and j
        other = xs[:, i : i + 1]
        mask = np.arange(t) != i
        num = np.where(mask, _mulmod(num, other), num)
        den = np.where(mask, _mulmod(den, (other - xs) % PRIME), den)
    if (den == 0).any():
        raise ShareError("two shares of one owner have the same x-coordinate")
    return _mulmod(num, inverse(den))


def interpolate_at(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Value at ``at`` (R,) of the polynomial through (xs, ys): (R, t), (R, t, L) -> (R, L)."""
    shifted = (np.asarray(xs, np.int64) - np.asarray(at, np.int64)[:, None]) % PRIME
    # owners with the same holders share their weights (all of them on the complete graph): O(t^2) once,
    # not O(R t^2)
    distinct, which = np.unique(shifted, axis=0, return_inverse=True)
    weights = lagrange_at_zero(distinct)[which.reshape(-1)]
    return (_mulmod(weights[:, :, None], ys).sum(axis=1)) % PRIME


def reconstruct(xs: np.ndarray, ys: np.ndarray, threshold: int, n_bytes: int, verify: bool = False) -> np.ndarray:
    """Secrets from the first ``threshold`` shares of each owner: (R, H), (R, H, L) -> (R, n_bytes) uint8.

    With ``verify`` and H > threshold, every further share is checked against the
    interpolated polynomial; a mismatch is a ``ShareError`` (a malformed or
    inconsistent share was handed in).
    """
    xs = np.asarray(xs, dtype=np.int64)
    ys = np.asarray(ys, dtype=np.int64)
    if xs.shape[1] < threshold:
        raise ShareError(f"{xs.shape[1]} shares per owner, {threshold} needed")
    base_x, base_y = xs[:, :threshold], ys[:, :threshold]
    limbs = interpolate_at(base_x, base_y, np.zeros(len(xs), dtype=np.int64))
    if verify:
        for j in range(threshold, xs.shape[1]):
            expected = interpolate_at(base_x, base_y, xs[:, j])
            bad = (expected != ys[:, j]).any(axis=1)
            if bad.any():
                raise ShareError(
                    f"{int(bad.sum())} owners have a share off their polynomial "
                    f"(holder x = {int(xs[np.flatnonzero(bad)[0], j])})"
                )
    return from_limbs(limbs, n_bytes)
