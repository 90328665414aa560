"""Single-server secure aggregation by pairwise masking (Bonawitz et al. 2017; Bell et al. 2020).

* ``protocol``: the four-round honest-but-curious protocol for one shard
  (``aggregate``), its parameters (``ProtocolParams``), the server's ``Transcript``
  and ``ProtocolError``.
* ``shamir``: vectorised t-of-n Shamir sharing over GF(2^31 − 1).
* ``crypto``: X25519, HKDF-SHA256, AES-CTR PRG and AES-GCM from ``cryptography``.
* ``graph``: complete or random k-regular (Harary) communication graphs.

Used by the per-client modes of the location heatmaps (``locpriv.heatmaps.clients``).
"""

from .protocol import ProtocolError, ProtocolParams, aggregate

__all__ = ["ProtocolError", "ProtocolParams", "aggregate"]
