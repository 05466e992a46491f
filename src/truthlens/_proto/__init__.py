"""Wire-compatible subset of Envoy's ext_proc v3 messages (generated ``*_pb2`` modules).

Regenerate after editing the ``.proto`` with ``python -m truthlens._proto.generate``.
"""
