"""The shipped embedding model, shared with the ACR tests (real ONNX Runtime, nothing scripted)."""

from acr.conftest import embedder  # noqa: F401
