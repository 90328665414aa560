"""Ingest: synthetic generators with analytic truth, and the real point loader."""
