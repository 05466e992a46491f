"""Offline tooling that writes model directories: a Hugging Face checkpoint → ONNX model directory
(``truthlens export``), and a model directory → Triton model repository. Never imported when serving."""
