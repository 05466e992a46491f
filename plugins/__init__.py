"""Policy plugins: the hallucination detector and the modes that act on its verdicts.

Kept import-light on purpose: importing ``plugins`` loads no model and no runtime.
"""
