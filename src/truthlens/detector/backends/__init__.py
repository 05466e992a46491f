"""Detector backends behind the one :class:`~truthlens.detector.types.Detector` interface: in-process
ONNX Runtime, a remote Open Inference Protocol server, a generative LLM detector, the cascade of an
encoder and a confirmer, and the factory that imports the named one lazily."""
