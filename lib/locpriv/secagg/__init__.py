"""Single-server secure aggregation by pairwise masking (Bonawitz et al. 2017; Bell et al. 2020).

* ``protocol``: the steps, what each party checks and what the server learns in each
  variant (``honest_but_curious``, ``active``); ``ProtocolParams``, ``ProtocolError``.
* ``client``: one client as a state machine holding only its own secrets.
* ``server``: the honest server, its checks and its ``Transcript``.
* ``simulate``: ``aggregate`` runs one shard in one process with dropouts at any step (``Dropouts``).
* ``graph``: complete or Harary graphs, the degree rule, the connectivity check.
* ``pki``: the active variant's simulated PKI (Ed25519) and key-set session id.
* ``shamir``: vectorised t-of-n Shamir sharing over GF(2^31 − 1).
* ``crypto``: X25519, HKDF-SHA256, AES-CTR PRG, AES-GCM, Ed25519 from ``cryptography``.
* ``service``: the protocol as a server process and client processes over TLS on 127.0.0.1;
  ``wire`` its versioned message format, ``store`` a client's key store, ``cli`` the
  ``locpriv-secagg`` command (imported on demand: asyncio, ssl and subprocess only there).

Used by the per-client modes of the location heatmaps (``locpriv.heatmaps.clients``).
"""

from .protocol import ProtocolError, ProtocolParams
from .simulate import CpuClock, Dropouts, aggregate

__all__ = ["CpuClock", "Dropouts", "ProtocolError", "ProtocolParams", "aggregate"]
