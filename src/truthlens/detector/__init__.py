"""Token-level hallucination detection for grounded answers (LettuceDetect-style).

The public surface lives in :mod:`truthlens.detector.types`; backends are created through
:func:`truthlens.detector.backends.factory.create_detector`, which imports them lazily.
"""
