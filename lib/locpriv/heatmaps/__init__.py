"""Location heatmaps under distributed DP with secure aggregation ([DDP-Heatmaps]).

Modules:

* ``polya``: distributed discrete-Laplace noise of §4 (Pólya shares, dropout
  provisioning, modular secure sum, achieved epsilon under dropout).
* ``prefix_tree``: prefix-tree encoding of the pixel grid (§5.1, §5.6).
* ``aggregation``: one simulated SecAgg sub-query at population scale (user
  sampling without replacement, shards, dropout, bincount aggregation, noise).
* ``adaptive``: the adaptive hierarchical histogram algorithm (Alg. 2, §5.2–5.5)
  with its budget schedule, split/collapse rules and map rendering.
* ``baselines``: flat, hierarchical, count-min sketch, adaptive grid (Qardaji et
  al. 2013), private spatial decomposition (Cormode et al. 2012), non-private floor.
* ``consistency``: least-squares combination of every sub-query's counts over the
  tree (post-processing).
* ``metrics``: MSE, elementwise L1, MAPE, sMAPE, MAAPE on normalised maps.
* ``multi_location``: several weighted locations per user (§5.7) and modular
  overflow.
* ``clients``: the per-client modes: each client's vector and Pólya share mod 2^bits,
  summed ideally or by pairwise-masking secure aggregation (``locpriv.secagg``).
* ``study``, ``multi_study``, ``plots``: the ``studies.heatmaps`` workflow stages.
"""
