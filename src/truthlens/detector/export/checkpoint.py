"""Exports a Hugging Face token-classification checkpoint to a detector model directory.

Writes ``model.onnx`` (dynamic batch and sequence axes), ``tokenizer.json`` and
``manifest.json`` (see docs/architecture.md), optionally quantises the weights to int8, and
verifies the result against torch on sample inputs: fp32 logits by maximum absolute
difference, int8 by agreement of the hallucination probabilities. Two int8 forms:

- ``int8``: dynamic int8, weights per channel, each activation tensor with one scale per run.
  The fastest on CPU; a borderline token moves with that one scale, so on the project's
  benchmark inputs about 7% of verdicts differ from the float checkpoint's.
- ``int8-blockwise``: weights in int8 blocks of 32 along the input axis, and activations
  quantised per block of 32 at run time (ONNX Runtime's ``MatMulNBits``, accuracy level 4).
  The finer scales keep about 99% of verdicts, for ~1.6x the CPU time of ``int8`` (still
  faster than fp32); for routes where agreeing with the checkpoint matters more than speed.

A model that fails verification raises :class:`ExportError`; nothing half-checked is reported
as done.

Before int8 quantisation the fp32 graph goes through ONNX Runtime's transformer optimizer
(``optimize_graph``: attention, embedding and layer-norm fusion for BERT-family models; the
checkpoint is then traced with eager attention, whose pattern the optimizer recognises) and is
verified again against torch; ``optimize_onnx`` applies the same step to an existing fp32 model
directory, verified against its unoptimised graph.

Needs the ``export`` extra (torch, transformers, onnx); serving never imports this module.
"""

from __future__ import annotations

import inspect
import json
import shutil
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from truthlens.detector.export.onnx_graph import (
    DEFAULT_SHAPE,
    QUANTIZATION_NAMES,
    ExportError,
    GraphShape,
    Quantize,
    check_quantize,
    optimize_graph,
    quantize_graph,
)
from truthlens.detector.export.verify import Verification, max_diff, onnx_logits, verify_int8, verify_optimized
from truthlens.detector.prompt import TEMPLATE_NAME, build_prompt

MANIFEST_FORMAT = "truthlens-detector/1"
FP32_LOGIT_TOLERANCE = 1e-3
# Architectures whose attention ONNX Runtime's "bert" optimizer fuses (config.model_type).
BERT_FAMILY = frozenset({"bert", "roberta", "xlm-roberta", "distilbert", "electra", "camembert"})

# Sample inputs for verification: one short, one padded to the window, both in a batch.
_SAMPLE_CONTEXT = (
    "The Eiffel Tower is 330 metres tall and was completed in March 1889.",
    "It was designed by the engineering company of Gustave Eiffel for the World's Fair.",
)
_SAMPLE_QUESTION = "How tall is the Eiffel Tower and when was it finished?"
_SAMPLE_ANSWER = "The Eiffel Tower is 330 metres tall. It was completed in 1901 by Gustave Eiffel's company."


@dataclass(frozen=True, slots=True)
class ExportReport:
    out_dir: str
    architecture: str
    inputs: tuple[str, ...]
    opset: int
    quantization: str
    max_length: int
    model_bytes: int
    seconds: float
    verification: Verification | None = None
    fused_operators: dict[str, int] | None = None  # None: the graph was not optimised
    files: tuple[str, ...] = field(default=("model.onnx", "tokenizer.json", "manifest.json"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def _logits_only(model: Any) -> Any:
    """Wraps the HF model so the graph has named tensor inputs and one ``logits`` output."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
        ) -> torch.Tensor:
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits

    return LogitsOnly().eval()


def _load_checkpoint(checkpoint_dir: Path, *, eager: bool = False) -> Any:
    from transformers import AutoModelForTokenClassification

    if eager:  # the attention pattern ONNX Runtime's optimizer fuses (sdpa's it does not)
        return AutoModelForTokenClassification.from_pretrained(
            str(checkpoint_dir), attn_implementation="eager"
        ).eval()
    try:
        # never flash-attention: it unpads the batch and cannot be traced
        model = AutoModelForTokenClassification.from_pretrained(str(checkpoint_dir), attn_implementation="sdpa")
    except (ValueError, ImportError):
        model = AutoModelForTokenClassification.from_pretrained(str(checkpoint_dir), attn_implementation="eager")
    return model.eval()


def _load_tokenizer(checkpoint_dir: Path) -> Any:
    """The fast tokenizer, with any padding/truncation settings stripped (the runtime owns those)."""
    from tokenizers import Tokenizer

    path = checkpoint_dir / "tokenizer.json"
    if path.exists():
        tokenizer = Tokenizer.from_file(str(path))
    else:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(checkpoint_dir))
        if not hf.is_fast:
            raise ExportError(f"{checkpoint_dir}: no fast tokenizer (tokenizer.json) available")
        tokenizer = hf.backend_tokenizer
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _input_names(model: Any) -> tuple[str, ...]:
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in accepted and getattr(model.config, "type_vocab_size", 0) > 1:
        names.append("token_type_ids")
    return tuple(names)


def _sample_batches(tokenizer: Any, input_names: Sequence[str], max_length: int) -> list[dict[str, np.ndarray]]:
    """Feeds: a short pair, a pair filling ``max_length`` (prompt truncated), and both padded together."""
    short = tokenizer.encode(build_prompt(_SAMPLE_CONTEXT, _SAMPLE_QUESTION), _SAMPLE_ANSWER)
    filler = tuple(
        f"{p} Passage {i} repeats background text to fill the window." for i, p in enumerate(_SAMPLE_CONTEXT * 200)
    )
    tokenizer.enable_truncation(max_length, strategy="only_first")
    try:
        long = tokenizer.encode(build_prompt(filler, _SAMPLE_QUESTION), _SAMPLE_ANSWER)
    finally:
        tokenizer.no_truncation()
    encodings = [short, long]

    def feed(encs: Sequence[Any]) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in encs)
        rows: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": [], "token_type_ids": []}
        for e in encs:
            pad = width - len(e.ids)
            rows["input_ids"].append(list(e.ids) + [0] * pad)
            rows["attention_mask"].append([1] * len(e.ids) + [0] * pad)
            rows["token_type_ids"].append(list(e.type_ids) + [0] * pad)
        return {name: np.asarray(rows[name], dtype=np.int64) for name in input_names}

    return [feed([short]), feed([long]), feed(encodings)]


def _torch_logits(model: Any, feed: Mapping[str, np.ndarray]) -> np.ndarray:
    import torch

    with torch.inference_mode():
        logits: np.ndarray = model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.float().numpy()
    return logits


def _export_graph(
    wrapper: Any, feed: Mapping[str, np.ndarray], input_names: Sequence[str], path: Path, opset: int, dynamo: bool
) -> None:
    import torch

    args = tuple(torch.from_numpy(feed[name]) for name in input_names)
    with warnings.catch_warnings():
        # The exporters warn about shape-dependent Python branches and indexing patterns in HF
        # model code; the ONNX-vs-torch verification that follows is what proves the graph.
        warnings.simplefilter("ignore")
        if dynamo:
            batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
            program = torch.onnx.export(
                wrapper, args, dynamo=True, opset_version=opset, input_names=list(input_names), output_names=["logits"],
                dynamic_shapes={name: {0: batch, 1: seq} for name in input_names},
                optimize=opset < 23,  # the fused RotaryEmbedding of opset 23 fails in onnxruntime
            )
            if program is None:
                raise ExportError("the dynamo exporter returned no program")
            program.save(str(path))
            return
        axes = {name: {0: "batch", 1: "sequence"} for name in input_names} | {"logits": {0: "batch", 1: "sequence"}}
        torch.onnx.export(
            wrapper, args, str(path), dynamo=False, opset_version=opset, input_names=list(input_names),
            output_names=["logits"], dynamic_axes=axes, do_constant_folding=True,
        )


def _hallucinated_index(config: Any) -> tuple[list[str], int]:
    labels = [str(config.id2label.get(i, f"LABEL_{i}")) for i in range(config.num_labels)]
    if config.num_labels != 2:
        raise ExportError(f"expected a 2-label token classifier, got {config.num_labels} labels")
    named = [i for i, name in enumerate(labels) if "halluc" in name.lower()]
    # LettuceDetect checkpoints keep the default LABEL_0/LABEL_1 names; 1 = hallucinated
    index = named[0] if named else 1
    return (["supported", "hallucinated"] if index == 1 else ["hallucinated", "supported"]), index


def export_model(
    checkpoint_dir: str | Path,
    out_dir: str | Path,
    *,
    quantize: Quantize = "none",
    opset: int = 17,
    max_length: int = 512,
    verify: bool = True,
    dynamo: bool = False,
    optimize: bool | None = None,
    provenance: Mapping[str, object] | None = None,
    metrics: Mapping[str, object] | None = None,
) -> ExportReport:
    """Export ``checkpoint_dir`` into ``out_dir`` (created; existing model files replaced).

    ``max_length`` is capped by the model's position limit and recorded in the manifest.
    ``optimize`` (None: on for int8) runs :func:`optimize_graph` before quantisation on
    BERT-family checkpoints (others are exported unfused, as the manifest says).
    ``provenance`` is merged into the manifest's ``source``; ``metrics`` becomes ``metrics``.
    """
    started = time.monotonic()
    checkpoint, out = Path(checkpoint_dir), Path(out_dir)
    if not (checkpoint / "config.json").exists():
        raise ExportError(f"{checkpoint}: not a Hugging Face checkpoint (no config.json)")
    check_quantize(quantize)
    model_type = str(json.loads((checkpoint / "config.json").read_text()).get("model_type", ""))
    # Fused attention only for dynamic int8: blockwise quantises MatMul nodes, and the fused
    # Attention's QKV weights would stay float (measured slower than the unfused blockwise graph).
    wanted = quantize == "int8" if optimize is None else optimize
    fuse = wanted and model_type in BERT_FAMILY
    # BERT-family graphs are always traced with eager attention, so an fp32 export can be
    # optimised later (optimize_onnx) as well as now.
    model = _load_checkpoint(checkpoint, eager=model_type in BERT_FAMILY)
    tokenizer = _load_tokenizer(checkpoint)
    labels, hallucinated = _hallucinated_index(model.config)
    positions = getattr(model.config, "max_position_embeddings", max_length)
    max_length = min(max_length, positions)
    names = _input_names(model)
    wrapper = _logits_only(model)
    feeds = _sample_batches(tokenizer, names, max_length)

    out.mkdir(parents=True, exist_ok=True)
    graph_note: dict[str, object] = {"optimizer": "none"}
    if wanted and not fuse:
        graph_note["skipped"] = f"model_type {model_type!r} is not one the bert optimizer fuses"
    with tempfile.TemporaryDirectory(prefix="truthlens-export-") as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        _export_graph(wrapper, feeds[-1], names, fp32, opset, dynamo)
        verification = None
        expected: list[np.ndarray] = []
        if verify:
            expected = [_torch_logits(model, feed) for feed in feeds]
            diff = max_diff(expected, onnx_logits(fp32, feeds), feeds)
            if not diff <= FP32_LOGIT_TOLERANCE:
                raise ExportError(f"ONNX logits differ from torch by {diff:.3g} (> {FP32_LOGIT_TOLERANCE})")
            verification = Verification(tuple(int(f["input_ids"].shape[1]) for f in feeds), diff)
        graph = fp32
        if fuse:
            graph = Path(tmp) / "model.optimized.onnx"
            shape = GraphShape(int(model.config.num_attention_heads), int(model.config.hidden_size))
            graph_note = _graph_note(optimize_graph(fp32, graph, shape))
            if verification is not None:
                verification = verify_optimized(expected, graph, feeds, verification)
        final = graph
        if quantize != "none":
            final = Path(tmp) / "model.int8.onnx"
            quantize_graph(quantize, graph, final)
            if verification is not None:
                verification = verify_int8(expected, final, feeds, hallucinated, verification)
        shutil.copyfile(final, out / "model.onnx")
    tokenizer.save(str(out / "tokenizer.json"))

    quantization = QUANTIZATION_NAMES[quantize]
    source: dict[str, object] = {
        "architecture": type(model).__name__,
        "base": checkpoint.resolve().name,  # never a machine-specific path
        "opset": opset,
        "exporter": "torch.onnx (dynamo)" if dynamo else "torch.onnx (torchscript)",
        "graph_optimization": graph_note,
        # what optimize_onnx needs to fuse this graph's attention later
        "num_attention_heads": int(getattr(model.config, "num_attention_heads", 0) or 0),
        "hidden_size": int(getattr(model.config, "hidden_size", 0) or 0),
    } | dict(provenance or {})
    if verification is not None:
        source["verification"] = asdict(verification)
    manifest = {
        "format": MANIFEST_FORMAT,
        "labels": labels,
        "hallucinated_index": hallucinated,
        "max_length": max_length,
        "prompt_template": TEMPLATE_NAME,
        "inputs": list(names),
        "quantization": quantization,
        "source": source,
        "metrics": dict(metrics or {}),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportReport(
        out_dir=str(out), architecture=type(model).__name__, inputs=names, opset=opset,
        quantization=quantization, max_length=max_length, model_bytes=(out / "model.onnx").stat().st_size,
        seconds=round(time.monotonic() - started, 2), verification=verification,
        fused_operators=_fused(graph_note),
    )


def optimize_onnx(
    model_path: str | Path, out_dir: str | Path, *, quantize: Quantize = "int8", shape: GraphShape = DEFAULT_SHAPE,
    verify: bool = True,
) -> ExportReport:
    """Re-optimise an existing fp32 model: ``model_path`` is a ``model.onnx`` (or its model
    directory, beside ``tokenizer.json`` and ``manifest.json``); writes a model directory to
    ``out_dir`` with the optimised (and, by default, int8) graph, verified against the input graph
    (no torch needed): fp32 logits by maximum difference, int8 by probability drift and verdicts."""
    started = time.monotonic()
    src = Path(model_path)
    src = src / "model.onnx" if src.is_dir() else src
    source_dir, out = src.parent, Path(out_dir)
    check_quantize(quantize)
    for needed in (src, source_dir / "tokenizer.json", source_dir / "manifest.json"):
        if not needed.is_file():
            raise ExportError(f"{needed}: not found (a model directory has model.onnx, tokenizer.json, manifest.json)")
    manifest = json.loads((source_dir / "manifest.json").read_text())
    names = tuple(str(n) for n in manifest.get("inputs", ("input_ids", "attention_mask")))
    max_length = int(manifest.get("max_length", 512))
    hallucinated = int(manifest.get("hallucinated_index", 1))
    recorded = manifest.get("source", {})
    shape = GraphShape(  # unset: what the export recorded, else the optimizer detects it
        shape.num_heads or int(recorded.get("num_attention_heads", 0) or 0),
        shape.hidden_size or int(recorded.get("hidden_size", 0) or 0),
    )
    tokenizer = _load_tokenizer(source_dir)
    feeds = _sample_batches(tokenizer, names, max_length)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="truthlens-optimize-") as tmp:
        graph = Path(tmp) / "model.optimized.onnx"
        note = _graph_note(optimize_graph(src, graph, shape))
        verification = None
        if verify:
            expected = onnx_logits(src, feeds)
            verification = Verification(tuple(int(f["input_ids"].shape[1]) for f in feeds), 0.0)
            verification = verify_optimized(expected, graph, feeds, verification)
        final = graph
        if quantize != "none":
            final = Path(tmp) / "model.int8.onnx"
            quantize_graph(quantize, graph, final)
            if verify:
                assert verification is not None
                verification = verify_int8(expected, final, feeds, hallucinated, verification)
        shutil.copyfile(final, out / "model.onnx")
    if source_dir.resolve() != out.resolve():
        shutil.copyfile(source_dir / "tokenizer.json", out / "tokenizer.json")
    quantization = QUANTIZATION_NAMES[quantize]
    source = dict(manifest.get("source", {})) | {"graph_optimization": note}
    if verification is not None:
        # checked against the input fp32 graph, not torch: max_abs_logit_diff is its own (0)
        source["verification"] = asdict(verification) | {"reference": "input fp32 ONNX graph"}
    manifest |= {"quantization": quantization, "source": source}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportReport(
        out_dir=str(out), architecture=str(source.get("architecture", "unknown")), inputs=names,
        opset=int(source.get("opset", 0) or 0), quantization=quantization, max_length=max_length,
        model_bytes=(out / "model.onnx").stat().st_size, seconds=round(time.monotonic() - started, 2),
        verification=verification, fused_operators=_fused(note),
    )


def _graph_note(fused: Mapping[str, int]) -> dict[str, object]:
    note: dict[str, object] = {"optimizer": "onnxruntime.transformers (bert)", "fused": dict(fused)}
    if not fused.get("Attention") and not fused.get("MultiHeadAttention"):
        # e.g. a graph traced with sdpa attention: still valid, only slower
        note["warning"] = "attention was not fused"
    return note


def _fused(note: Mapping[str, object]) -> dict[str, int] | None:
    fused = note.get("fused")
    return dict(fused) if isinstance(fused, dict) else None


