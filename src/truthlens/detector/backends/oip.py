"""A small synchronous Open Inference Protocol (KServe v2) gRPC client.

Triton, KServe and every other v2 server answer the same ``inference.GRPCInferenceService``
methods; the messages come from ``src/truthlens/_proto/oip_v2.proto`` (wire-compatible, own package name),
so no vendor client is needed. Tensors travel as raw little-endian bytes
(``raw_input_contents``); answers in either raw or typed ``contents`` form are read.

Calls are blocking (the detector's micro-batcher runs them in its worker threads) and spread
round-robin over a few channels: one HTTP/2 connection multiplexes calls, but a single
channel's Python-side work caps throughput under concurrency. gRPC failures become
:class:`RemoteError` with a metric-safe reason: ``remote_timeout`` (deadline exceeded),
``remote_unavailable`` (cannot connect, server or model not ready) or ``remote_error``.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import grpc
import numpy as np
from google.protobuf.message import Message

from truthlens._proto import oip_v2_pb2 as pb
from truthlens.detector.types import DetectorError

SERVICE = "/inference.GRPCInferenceService/"

# v2 datatype names ↔ numpy dtypes (the ones a token classifier needs, and their neighbours).
DATATYPES: dict[str, np.dtype] = {
    "INT64": np.dtype("<i8"),
    "INT32": np.dtype("<i4"),
    "FP32": np.dtype("<f4"),
    "FP16": np.dtype("<f2"),
    "FP64": np.dtype("<f8"),
    "BOOL": np.dtype("?"),
}
_CONTENTS_FIELD = {
    "INT64": "int64_contents",
    "INT32": "int_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BOOL": "bool_contents",
}
# Keep big batches of long rows under gRPC's 4 MiB default.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class RemoteError(DetectorError):
    """A v2 call failed; ``reason`` is ``remote_timeout``, ``remote_unavailable`` or ``remote_error``."""


def reason_for(code: grpc.StatusCode | None) -> str:
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "remote_timeout"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return "remote_unavailable"
    return "remote_error"


@dataclass(frozen=True, slots=True)
class TensorSpec:
    name: str
    datatype: str
    shape: tuple[int, ...]  # -1: variable


@dataclass(frozen=True, slots=True)
class ModelMetadata:
    name: str
    platform: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


class OipClient:
    """Blocking v2 calls to one server (``host:port``), safe to use from many threads."""

    def __init__(self, url: str, *, channels: int = 2, tls: bool = False) -> None:
        if channels < 1:
            raise ValueError("channels must be >= 1")
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            # Distinct channels get distinct connections instead of sharing one subchannel.
            ("grpc.use_local_subchannel_pool", 1),
            # A name resolving to several servers (a headless Service of a Triton pool): spread
            # calls over all of them rather than pinning the first.
            ("grpc.lb_policy_name", "round_robin"),
            # Reconnect quickly once a restarted server is back (the default backs off to 2 min).
            ("grpc.initial_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 2000),
        ]
        self.url = url
        self._channels = [
            grpc.secure_channel(url, grpc.ssl_channel_credentials(), options=options)
            if tls
            else grpc.insecure_channel(url, options=options)
            for _ in range(channels)
        ]
        self._stubs = [_Stubs(ch) for ch in self._channels]
        self._next = itertools.cycle(range(channels))
        self._lock = threading.Lock()

    def _stub(self) -> _Stubs:
        with self._lock:
            return self._stubs[next(self._next)]

    def server_ready(self, timeout_s: float) -> bool:
        """``/v2/health/ready``; False (never raises) when the server cannot be reached."""
        try:
            return bool(self._stub().server_ready(pb.ServerReadyRequest(), timeout=timeout_s).ready)
        except grpc.RpcError:
            return False

    def model_ready(self, name: str, version: str, timeout_s: float) -> bool:
        try:
            request = pb.ModelReadyRequest(name=name, version=version)
            return bool(self._stub().model_ready(request, timeout=timeout_s).ready)
        except grpc.RpcError:
            return False

    def model_metadata(self, name: str, version: str, timeout_s: float) -> ModelMetadata:
        request = pb.ModelMetadataRequest(name=name, version=version)
        try:
            reply = self._stub().model_metadata(request, timeout=timeout_s)
        except grpc.RpcError as exc:
            raise _remote_error(exc, f"model metadata of {name!r}") from exc

        def specs(tensors: Sequence[pb.ModelMetadataResponse.TensorMetadata]) -> tuple[TensorSpec, ...]:
            return tuple(TensorSpec(t.name, t.datatype, tuple(int(d) for d in t.shape)) for t in tensors)

        return ModelMetadata(reply.name, reply.platform, specs(reply.inputs), specs(reply.outputs))

    def infer(
        self,
        name: str,
        version: str,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str],
        *,
        timeout_s: float,
    ) -> dict[str, np.ndarray]:
        """Run the model on ``inputs`` (name → array) and return the requested ``outputs``."""
        request = pb.ModelInferRequest(model_name=name, model_version=version)
        for tensor_name, array in inputs.items():
            datatype = _datatype(array.dtype)
            request.inputs.add(name=tensor_name, datatype=datatype, shape=array.shape)
            request.raw_input_contents.append(np.ascontiguousarray(array, dtype=DATATYPES[datatype]).tobytes())
        for tensor_name in outputs:
            request.outputs.add(name=tensor_name)
        try:
            reply = self._stub().infer(request, timeout=timeout_s)
        except grpc.RpcError as exc:
            raise _remote_error(exc, f"inference on {name!r}") from exc
        return _read_outputs(reply, outputs)

    def close(self) -> None:
        for channel in self._channels:
            channel.close()


class _Stubs:
    """The v2 methods this client calls, bound to one channel."""

    def __init__(self, channel: grpc.Channel) -> None:
        def method(name: str, request: type[Message], reply: type[Message]) -> grpc.UnaryUnaryMultiCallable:
            return channel.unary_unary(
                SERVICE + name, request_serializer=request.SerializeToString, response_deserializer=reply.FromString
            )

        self.server_ready = method("ServerReady", pb.ServerReadyRequest, pb.ServerReadyResponse)
        self.model_ready = method("ModelReady", pb.ModelReadyRequest, pb.ModelReadyResponse)
        self.model_metadata = method("ModelMetadata", pb.ModelMetadataRequest, pb.ModelMetadataResponse)
        self.infer = method("ModelInfer", pb.ModelInferRequest, pb.ModelInferResponse)


def _datatype(dtype: np.dtype) -> str:
    for name, known in DATATYPES.items():
        if known == dtype.newbyteorder("<") or known == dtype:
            return name
    raise ValueError(f"no v2 datatype for numpy dtype {dtype}")


def _remote_error(exc: grpc.RpcError, what: str) -> RemoteError:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return RemoteError(reason_for(code), f"{what} failed: {code.name if code else 'error'}: {details}")


def _read_outputs(reply: pb.ModelInferResponse, wanted: Sequence[str]) -> dict[str, np.ndarray]:
    raw = list(reply.raw_output_contents)
    found: dict[str, np.ndarray] = {}
    for i, tensor in enumerate(reply.outputs):
        if tensor.name not in wanted:
            continue
        dtype = DATATYPES.get(tensor.datatype)
        if dtype is None:
            raise RemoteError("remote_error", f"output {tensor.name!r} has unsupported datatype {tensor.datatype}")
        shape = tuple(int(d) for d in tensor.shape)
        if raw:
            if i >= len(raw):
                raise RemoteError("remote_error", f"output {tensor.name!r} has no raw contents")
            array = np.frombuffer(raw[i], dtype=dtype)
        else:
            field = _CONTENTS_FIELD.get(tensor.datatype)
            if field is None:
                raise RemoteError(
                    "remote_error", f"output {tensor.name!r} ({tensor.datatype}) came without raw contents"
                )
            array = np.asarray(getattr(tensor.contents, field), dtype=dtype)
        if array.size != int(np.prod(shape)):
            raise RemoteError("remote_error", f"output {tensor.name!r}: {array.size} values for shape {shape}")
        found[tensor.name] = array.reshape(shape)
    missing = [n for n in wanted if n not in found]
    if missing:
        raise RemoteError("remote_error", f"the server's answer lacks outputs {missing}")
    return found
