"""Figure-level functions called by the workflow plot scripts (one per plot rule)."""

__all__: list[str] = []
