"""Token-level hallucination detection for grounded answers (LettuceDetect-style).

The public surface lives in :mod:`plugins.detector.types`; backends are created through
:func:`plugins.detector.factory.create_detector`, which imports them lazily.
"""
