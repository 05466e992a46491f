"""Rebuild a Hugging Face BERT token-classifier checkpoint from a shipped int8 ONNX detector.

Why: the recipe continues training from the model that ships (``--base``), and the fp32
checkpoint it was exported from lives in ``training/output/`` (git-ignored), so a fresh clone
does not have it. The shipped graph holds every weight: LayerNorm parameters and biases as
float initialisers under their PyTorch names, embeddings as per-tensor uint8, and each linear
layer as a per-channel int8 ``MatMulInteger`` weight whose node name says which layer it is
(``/model/bert/encoder/layer.2/attention/self/query/MatMul_quant``). Dequantised
(``(q - zero_point) * scale``) and transposed back to ``nn.Linear``'s ``[out, in]`` layout they
give a checkpoint within int8 rounding of the original, which fine-tuning then moves anyway.

    python -m training.recover --model src/truthlens/detector/default_model --out training/output/hf-shipped
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import AutoConfig, AutoModelForTokenClassification

_LINEAR_NODE = re.compile(r"^/model/(?P<path>.+)/MatMul_quant$")


def recovered_state(model_path: Path) -> dict[str, np.ndarray]:
    """PyTorch parameter name → fp32 array, for every weight of the quantised BERT graph."""
    graph = onnx.load(str(model_path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, np.ndarray] = {}
    for name, value in inits.items():
        if name.startswith("model.") and value.dtype == np.float32 and not name.endswith("_scale"):
            state[name.removeprefix("model.")] = value
        elif name.startswith("model.") and name.endswith(".weight_quantized"):  # embeddings, per tensor
            base = name.removesuffix("_quantized")
            q = value.astype(np.float32) - inits[f"{base}_zero_point"].astype(np.float32)
            state[base.removeprefix("model.")] = q * inits[f"{base}_scale"]
    for node in graph.node:
        match = _LINEAR_NODE.match(node.name)
        if node.op_type != "MatMulInteger" or match is None:
            continue
        weight = node.input[1]
        base = weight.removesuffix("_quantized")
        q = inits[weight].astype(np.float32) - inits[f"{base}_zero_point"].astype(np.float32)
        dense = q * inits[f"{base}_scale"]  # [in, out], one scale per output channel
        layer = match["path"].replace("/", ".")
        state[f"{layer}.weight"] = dense.T.copy()
    return state


def recover(model_dir: Path, out: Path, config_dir: Path) -> Path:
    """Write an HF checkpoint (config, weights, tokenizer) rebuilt from ``model_dir``'s graph."""
    config = AutoConfig.from_pretrained(config_dir, num_labels=2)
    model = AutoModelForTokenClassification.from_config(config)
    state = {k: torch.from_numpy(v.copy()) for k, v in recovered_state(model_dir / "model.onnx").items()}
    own = model.state_dict()
    missing = [k for k in own if k not in state and not k.endswith("position_ids")]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise ValueError(f"graph and architecture differ: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for key, value in state.items():
        if tuple(value.shape) != tuple(own[key].shape):
            raise ValueError(f"{key}: graph shape {tuple(value.shape)} != model shape {tuple(own[key].shape)}")
    model.load_state_dict(state, strict=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    shutil.copyfile(model_dir / "tokenizer.json", out / "tokenizer.json")
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (config_dir / name).exists():
            shutil.copyfile(config_dir / name, out / name)
    return out


def main(argv: list[str] | None = None) -> int:
    from training.train import default_base

    parser = argparse.ArgumentParser(prog="python -m training.recover", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("src/truthlens/detector/default_model"))
    parser.add_argument("--out", type=Path, default=Path("training/output/hf-shipped"))
    parser.add_argument("--config", type=Path, default=None, help="architecture config dir (default: the base encoder)")
    args = parser.parse_args(argv)
    out = recover(args.model, args.out, args.config or default_base())
    print(f"recovered checkpoint in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
