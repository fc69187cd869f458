"""Experiment-level functions called by the workflow scripts (one per compute rule)."""

__all__: list[str] = []
