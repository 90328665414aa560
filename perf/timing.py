"""The benchmarks' one timer (run as ``python perf/bench_*.py``, so this folder is on sys.path)."""

import time


def timed(fn, repeat: int = 1, clock=time.perf_counter):
    """(best time over ``repeat`` calls, the last result); ``clock=time.process_time`` for CPU seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out
