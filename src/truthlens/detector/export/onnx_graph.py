"""ONNX graph steps of an export: int8 quantisation (dynamic per channel, or blockwise
``MatMulNBits``) and ONNX Runtime's transformer optimizer (attention, embedding and layer-norm
fusion). Each writes a new file; the caller verifies it (:mod:`~truthlens.detector.export.checkpoint`).
:class:`ExportError` is what any export step raises."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


class ExportError(RuntimeError):
    """The export or its verification failed."""


Quantize = Literal["none", "int8", "int8-blockwise"]


# What each choice writes as the manifest's "quantization".
QUANTIZATION_NAMES: dict[Quantize, str] = {
    "none": "none", "int8": "int8-dynamic-per-channel", "int8-blockwise": "int8-blockwise-32",
}


# Input-axis block of the blockwise form: weights and activations get one scale per 32 values.
BLOCKWISE_BLOCK = 32


def check_quantize(quantize: str) -> None:
    if quantize not in QUANTIZATION_NAMES:
        raise ExportError(f"quantize must be one of {', '.join(QUANTIZATION_NAMES)}; got {quantize!r}")


def quantize_graph(quantize: Quantize, src: Path, dst: Path) -> None:
    if quantize == "int8-blockwise":
        _quantize_blockwise(src, dst)
    else:
        _quantize_int8(src, dst)


def _quantize_blockwise(src: Path, dst: Path) -> None:
    """Every MatMul with a constant weight as ``MatMulNBits``: 8-bit symmetric weight blocks, and
    accuracy level 4 (int8 compute, activations quantised per block at run time). The embedding
    tables (``Gather``, which MatMulNBits takes only at 4 bits) are stored as per-tensor uint8, as
    in the ``int8`` form: they are most of a small encoder's bytes (MiniLM: 59 MB -> 24 MB), and
    the measured agreement with fp32 stays at 99%."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    try:
        config = DefaultWeightOnlyQuantConfig(block_size=BLOCKWISE_BLOCK, is_symmetric=True, accuracy_level=4, bits=8)
        quantizer = MatMulNBitsQuantizer(onnx.load(str(src)), algo_config=config)
        quantizer.process()
    except (TypeError, ValueError, NotImplementedError) as exc:  # an onnxruntime without 8-bit blocks
        raise ExportError(f"this onnxruntime cannot write 8-bit MatMulNBits ({exc})") from exc
    quantized = {node.op_type for node in quantizer.model.model.graph.node}
    if "MatMulNBits" not in quantized:
        raise ExportError(f"{src}: no MatMul with a constant weight to quantise blockwise")
    blocks = dst.with_name(dst.stem + ".blocks.onnx")
    quantizer.model.save_model_to_file(str(blocks), use_external_data_format=False)
    quantize_dynamic(
        str(blocks), str(dst), op_types_to_quantize=["Gather"], weight_type=QuantType.QUInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    blocks.unlink()


def _quantize_int8(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src), str(dst), per_channel=True, weight_type=QuantType.QInt8,
        # fused graphs carry value infos without types; without a default the quantiser fails
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


@dataclass(frozen=True, slots=True)
class GraphShape:
    """What the optimizer cannot always read off a traced graph."""

    num_heads: int = 0  # 0: let the optimizer detect it
    hidden_size: int = 0


DEFAULT_SHAPE = GraphShape()


def optimize_graph(src: Path, dst: Path, shape: GraphShape = DEFAULT_SHAPE) -> dict[str, int]:
    """ONNX Runtime's transformer optimizer (``model_type="bert"``) over the fp32 graph ``src``,
    written to ``dst``; returns the fused operators it made (name → count, zeros left out).
    Refuses an already quantised graph: its matmuls no longer form the patterns it fuses."""
    import logging

    import onnx
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    ops = {node.op_type for node in onnx.load(str(src), load_external_data=False).graph.node}
    if ops & {"MatMulInteger", "DynamicQuantizeMatMul", "QAttention", "DynamicQuantizeLinear"}:
        raise ExportError(f"{src}: the graph is already quantised; optimise its fp32 graph instead")
    # the optimizer logs every pattern it did not find at WARNING; the counts below say what it did
    quiet = logging.getLogger("onnxruntime.transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        optimized = optimize_model(
            str(src), model_type="bert", num_heads=shape.num_heads, hidden_size=shape.hidden_size,
            optimization_options=FusionOptions("bert"), use_gpu=False,
        )
    except Exception as exc:  # the optimizer raises assorted errors on graphs it cannot walk
        raise ExportError(f"{src}: ONNX Runtime's transformer optimizer failed ({exc})") from exc
    finally:
        quiet.setLevel(level)
    optimized.save_model_to_file(str(dst))
    stats = optimized.get_fused_operator_statistics()
    return {name: int(count) for name, count in stats.items() if count}
