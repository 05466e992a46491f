"""Corpus generator and training recipe of the shipped detector model (not needed to serve)."""
