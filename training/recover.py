"""Rebuild a Hugging Face BERT token-classifier checkpoint from a shipped int8 ONNX detector.

Why: the recipe continues training from the model that ships (``--base``), and the fp32
checkpoint it was exported from lives in ``training/output/`` (git-ignored), so a fresh clone
does not have it. The shipped graph holds every weight: LayerNorm parameters and biases as
float initialisers under their PyTorch names, embeddings as per-tensor uint8, and each linear
layer as a per-channel int8 ``MatMulInteger`` weight whose node name says which layer it is
(``/model/bert/encoder/layer.2/attention/self/query/MatMul_quant``). Dequantised
(``(q - zero_point) * scale``) and transposed back to ``nn.Linear``'s ``[out, in]`` layout they
give a checkpoint within int8 rounding of the original, which fine-tuning then moves anyway.

Graphs exported with attention fusion (the shipped one) pack each layer's query, key and value
weights into one ``QAttention`` node, ``Attention_<layer>_quant``, as a per-column int8
``[hidden, 3 × hidden]`` matrix (query, key, value side by side) and a float ``[3 × hidden]``
bias; they are split back here. The fused graph's other weights keep their PyTorch names
(``model.bert.encoder.layer.0.output.dense.bias`` on the ``SkipLayerNormalization`` node,
the embedding LayerNorm as per-tensor uint8), so they are read by name.

    python -m training.recover --model src/truthlens/detector/default_model --out training/output/hf-shipped
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import AutoConfig, AutoModelForTokenClassification

RECOVERED = "recovered.json"
# "/model/bert/encoder/layer.2/attention/self/query/MatMul_quant", ".../query/Add",
# ".../output/LayerNorm/LayerNormalization": the node name is the PyTorch module path.
_NODE = re.compile(r"^/model/(?P<path>.+?)(?:/(?P<op>MatMul_quant|Add|LayerNormalization))$")
_FUSED_ATTENTION = re.compile(r"^Attention_(?P<layer>\d+)_quant$")


def _dequantised(inits: dict[str, np.ndarray], quantized: str) -> np.ndarray:
    base = quantized.removesuffix("_quantized")
    q = inits[quantized].astype(np.float32) - inits[f"{base}_zero_point"].astype(np.float32)
    return np.asarray(q * inits[f"{base}_scale"], dtype=np.float32)


def recovered_state(model_path: Path) -> dict[str, np.ndarray]:
    """PyTorch parameter name → fp32 array, for every weight of the quantised BERT graph.

    Parameters are found through the nodes that use them (the exporter shares one initialiser
    between equal tensors, e.g. zero biases, so initialiser names alone can miss some)."""
    graph = onnx.load(str(model_path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, np.ndarray] = {}
    for name, value in inits.items():
        if name.startswith("model.") and name.endswith(("weight_quantized", "bias_quantized")):  # per tensor
            state[name.removesuffix("_quantized").removeprefix("model.")] = _dequantised(inits, name)
        elif name.startswith("model.") and name.endswith((".weight", ".bias")) and value.dtype == np.float32:
            state[name.removeprefix("model.")] = value
    for node in graph.node:
        fused = _FUSED_ATTENTION.match(node.name)
        if fused is not None and node.op_type == "QAttention":
            prefix = f"bert.encoder.layer.{fused['layer']}.attention.self"
            weight = _dequantised(inits, node.input[1])  # [in, 3 × out]: query | key | value
            for part, w, b in zip(("query", "key", "value"), np.split(weight, 3, axis=1),
                                  np.split(inits[node.input[2]], 3), strict=True):
                state[f"{prefix}.{part}.weight"], state[f"{prefix}.{part}.bias"] = w.T.copy(), b
            continue
        match = _NODE.match(node.name)
        if match is None:
            continue
        layer = match["path"].replace("/", ".")
        floats = [x for x in node.input if x in inits and inits[x].dtype == np.float32]
        if node.op_type == "MatMulInteger" and match["op"] == "MatMul_quant":
            state[f"{layer}.weight"] = _dequantised(inits, node.input[1]).T.copy()  # [in, out] → nn.Linear's
        elif node.op_type == "Add" and match["op"] == "Add" and len(floats) == 1:
            state[f"{layer}.bias"] = inits[floats[0]]
        elif node.op_type == "LayerNormalization" and len(node.input) == 3 and all(x in inits for x in node.input[1:]):
            state[f"{layer}.weight"], state[f"{layer}.bias"] = inits[node.input[1]], inits[node.input[2]]
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
    # The runs that trained the graph, so the next model's manifest names its whole lineage.
    manifest = json.loads((model_dir / "manifest.json").read_text())
    provenance = {"recovered_from": str(model_dir), "training": manifest.get("source", {}).get("training", [])}
    (out / RECOVERED).write_text(json.dumps(provenance, indent=2) + "\n")
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


def agreement(
    model_dir: Path, checkpoint: Path, pairs: list[tuple[str, str]], max_length: int = 512
) -> dict[str, float]:
    """Token hallucination probabilities of ``checkpoint`` (torch) against ``model_dir``'s graph (ONNX Runtime).

    ``pairs`` are ``(prompt, answer)``; each is encoded as serving encodes it, with the prompt
    cut to fit ``max_length``. Returns the mean and largest absolute probability difference
    over answer tokens and the share of answer tokens on the same side of 0.5."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length, strategy="only_first")
    session = ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    model = AutoModelForTokenClassification.from_pretrained(checkpoint).eval()
    diffs: list[np.ndarray] = []
    same: list[np.ndarray] = []
    for prompt, answer in pairs:
        enc = tokenizer.encode(prompt, answer)
        ids = np.array([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.array([enc.type_ids])}
        graph = session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0][0]
        with torch.no_grad():
            torch_logits = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).logits[0].numpy()
        answer_tokens = np.array([s == 1 for s in enc.sequence_ids])

        def hallucinated(logits: np.ndarray) -> np.ndarray:
            e = np.exp(logits - logits.max(axis=-1, keepdims=True))
            return np.asarray((e / e.sum(axis=-1, keepdims=True))[:, 1])

        p_graph, p_torch = hallucinated(graph)[answer_tokens], hallucinated(torch_logits)[answer_tokens]
        diffs.append(np.abs(p_graph - p_torch))
        same.append((p_graph >= 0.5) == (p_torch >= 0.5))
    d, s = np.concatenate(diffs), np.concatenate(same)
    return {"inputs": len(pairs), "tokens": int(len(d)), "mean_abs_diff": float(d.mean()),
            "max_abs_diff": float(d.max()), "label_agreement": float(s.mean())}
