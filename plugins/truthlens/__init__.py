"""TruthLens policy modes: lightweight (detect and warn), standard (self-refine) and premium
(cross-model consensus). Each mode lives in its own module, imported by
:mod:`plugins.registry` only when a configuration names it.
"""
