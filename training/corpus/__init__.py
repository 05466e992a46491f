"""Synthetic grounded-QA hallucination corpus with character-level labels (deterministic by seed)."""
