"""TruthLens ExtProc: an Envoy external processor that checks RAG answers for hallucinations.

Subpackages, one job each: :mod:`truthlens.gateway` (the ext_proc server and the HTTP exchange),
:mod:`truthlens.detector` (the token classifier and its backends), :mod:`truthlens.modes` (what a
route does with a verdict), :mod:`truthlens.evidence` (embeddings and evidence gating),
:mod:`truthlens.llm` (the OpenAI-compatible client for re-asks), :mod:`truthlens.testing` (the
scripted upstream and retriever). Importing ``truthlens`` loads no model, no runtime and no gRPC.
"""

__version__ = "0.1.0"
