"""TruthLens ExtProc: an Envoy external processor that checks RAG answers for hallucinations.

Kept import-light: importing ``extproc`` loads neither gRPC nor a model.
"""
