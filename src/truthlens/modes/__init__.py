"""What a route does with a check: lightweight (detect and warn), standard (self-refine),
premium (cross-model consensus), acr (context-memory conflict fusion) and auto (escalation).
Each mode lives in its own module, imported by :mod:`truthlens.modes.registry` only when a
configuration names it; :mod:`truthlens.modes.base` is the contract they share, and
:class:`truthlens.options.Section` reads every mode's options.
"""
