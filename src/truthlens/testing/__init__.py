"""Test doubles and launchers shipped with the package, as httpx ships its mock transport.

The scripted OpenAI-compatible upstream (:mod:`truthlens.testing.upstream`) and the scripted
retriever (:mod:`truthlens.testing.retriever`) are the only doubles (with a bare socket for
replies no server would write, :mod:`truthlens.testing.raw_upstream`): everything else the demo,
the tests and the benchmarks start is real (Envoy, the processor, Triton, an OTLP receiver).
Nothing in the gateway imports this package.
"""
