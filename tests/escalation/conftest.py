"""Real collaborators shared with the ACR tests; only the upstream LLM is scripted."""

from acr.conftest import detector, embedder, llm, spans, upstream  # noqa: F401
