"""``mode: auto`` — a cheap monitor decides whether an expensive mode runs (MetaRAG-style)."""
