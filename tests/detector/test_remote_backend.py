"""``detector.backend: remote`` without a model server: configuration, the Triton repository
writer, overlapping batches, and a server that is not there (never "clean").

Runs against real gRPC (a loopback port nothing listens on) and real ONNX graphs; the checks
against a real Triton server are in ``test_remote_triton.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.detector.backends.factory import check_settings, create_detector
from truthlens.detector.backends.oip import RemoteError
from truthlens.detector.batcher import CHECK_DEADLINE, MicroBatcher, batch_time_left
from truthlens.detector.export.triton_repo import RepoOptions, model_config, write_triton_repo
from truthlens.detector.types import DetectionInput, DetectorSettings, RemoteSettings
from truthlens.gateway.core import errors
from truthlens.gateway.policy.config import load_config, parse_config
from truthlens.options import ConfigError
from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "examples" / "remote.yaml"


def _example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))


def _error(doc: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    return info.value


# ---------------------------------------------------------------- configuration


def test_the_example_config_loads_with_remote_settings() -> None:
    config = load_config(EXAMPLE)
    d = config.detector
    assert d.backend == "remote" and d.max_in_flight == 4
    assert d.remote == RemoteSettings(url="127.0.0.1:8001", model_name="truthlens_detector", model_version="",
                                      timeout_ms=2000.0, channels=2, health_interval_s=2.0, tls=False)
    check_settings(d)  # the factory accepts what the loader produced


def test_remote_backend_without_a_remote_section_names_the_key() -> None:
    doc = _example()
    del doc["detector"]["remote"]
    assert _error(doc).key == "detector.remote"


def test_a_remote_section_with_another_backend_is_refused() -> None:
    doc = _example()
    doc["detector"]["backend"] = "onnx"
    err = _error(doc)
    assert err.key == "detector.remote" and "only used by backend 'remote'" in str(err)


@pytest.mark.parametrize(
    ("key", "value"),
    [("url", "http://triton:8001"), ("url", "triton"), ("timeout_ms", 0), ("channels", 0), ("colour", "blue")],
)
def test_bad_remote_keys_are_named(key: str, value: Any) -> None:
    doc = _example()
    doc["detector"]["remote"][key] = value
    assert _error(doc).key == f"detector.remote.{key}"


def test_numeric_model_version_is_read_as_text_and_in_flight_defaults_by_backend() -> None:
    doc = _example()
    doc["detector"]["remote"]["model_version"] = 3
    del doc["detector"]["batching"]["max_in_flight"]
    d = parse_config(doc).detector
    assert d.remote is not None and d.remote.model_version == "3" and d.max_in_flight == 4
    shipped = load_config(REPO / "configs" / "config.yaml").detector
    assert shipped.max_in_flight == 2 and shipped.remote is None  # in-process: two runs at once


def test_factory_names_each_bad_remote_field() -> None:
    bad = DetectorSettings(backend="remote", remote=RemoteSettings(url="nohost", model_name="", channels=0))
    with pytest.raises(ValueError) as info:
        check_settings(bad)
    for field in ("remote.url", "remote.model_name", "remote.channels"):
        assert field in str(info.value)
    with pytest.raises(ValueError, match="needs remote settings"):
        check_settings(DetectorSettings(backend="remote"))


def test_remote_reasons_map_onto_gateway_reasons() -> None:
    assert errors.normalize_reason("remote_unavailable") == "detector_unavailable"
    assert errors.normalize_reason("remote_timeout") == "detector_timeout"
    assert errors.normalize_reason("remote_error") == "detector_error"
    assert errors.REASONS["detector_unavailable"][0] == 503


# ---------------------------------------------------------------- no server listening


async def test_a_server_that_is_not_there_gives_unavailable_never_clean(tiny_model_dir: Path) -> None:
    port = launch.free_port()  # nothing listens: connections are refused
    settings = DetectorSettings(
        model_dir=str(tiny_model_dir), backend="remote", chunk_aggregation="max", evidence_checks=False,
        remote=RemoteSettings(url=f"127.0.0.1:{port}", timeout_ms=500, health_interval_s=0.2),
    )
    started = time.monotonic()
    detector = create_detector(settings)  # starts anyway: gateways and servers start in any order
    try:
        assert detector.backend_ready is False
        item = DetectionInput(["Paris is the capital of France."], "Capital?", "The capital is Berlin.")
        results = await detector.detect_many([item, item], threshold=0.5)
        for result in results:
            assert result.status == "unavailable" and result.score is None
            assert result.reason == "remote_unavailable"
        assert time.monotonic() - started < 5  # fails at once while the server is known down
    finally:
        await detector.close()


# ---------------------------------------------------------------- overlapping batches


async def test_max_in_flight_overlaps_batches_and_keeps_backend_reasons() -> None:
    inside = 0
    peak = 0
    lock = threading.Lock()
    release = threading.Event()

    def run(rows: Sequence[int]) -> list[int]:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        release.wait(5)
        with lock:
            inside -= 1
        if rows[0] < 0:
            raise RemoteError("remote_timeout", "too slow")
        return [r * 2 for r in rows]

    batcher: MicroBatcher[int, int] = MicroBatcher(run, abs, max_batch_size=1, max_wait_s=0.0, max_queue=16,
                                                   max_in_flight=3)
    try:
        calls = [asyncio.ensure_future(batcher.submit([v])) for v in (1, 2, 3)]
        deadline = time.monotonic() + 5
        while peak < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert peak == 3  # three one-row batches were in the model at once
        release.set()
        assert [await c for c in calls] == [[2], [4], [6]]
        with pytest.raises(RemoteError) as info:
            await batcher.submit([-1])
        assert info.value.reason == "remote_timeout"  # not rewritten to model_error
    finally:
        release.set()
        await batcher.close()


async def test_the_checks_deadline_reaches_the_run_function() -> None:
    seen: list[float | None] = []

    def run(rows: Sequence[int]) -> list[int]:
        seen.append(batch_time_left())
        return list(rows)

    batcher: MicroBatcher[int, int] = MicroBatcher(run, abs, max_batch_size=4, max_wait_s=0.0, max_queue=4)
    try:
        assert await batcher.submit([1]) == [1]  # a check without a budget: no deadline
        token = CHECK_DEADLINE.set(asyncio.get_running_loop().time() + 3.0)
        try:
            assert await batcher.submit([2]) == [2]
        finally:
            CHECK_DEADLINE.reset(token)
        assert seen[0] is None
        assert seen[1] is not None and 2.0 < seen[1] <= 3.0
        assert batch_time_left() is None  # only inside a run function
    finally:
        await batcher.close()


# ---------------------------------------------------------------- Triton repository


def test_triton_repo_declares_the_graphs_tensors(tmp_path: Path, tiny_model_dir: Path) -> None:
    options = RepoOptions(max_batch_size=16, preferred_batch_sizes=(4, 8, 32), kind="cpu", instances=2)
    written = write_triton_repo(str(tiny_model_dir), tmp_path / "repo", options)
    names = [p.name for p in written]
    assert names[0] == "truthlens_detector"
    detector = tmp_path / "repo" / "truthlens_detector"
    assert (detector / "1" / "model.onnx").read_bytes() == (tiny_model_dir / "model.onnx").read_bytes()
    text = (detector / "config.pbtxt").read_text(encoding="utf-8")
    # The tiny graph takes input_ids only and returns [batch, seq, 2] logits.
    assert '{ name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }' in text
    assert "attention_mask" not in text
    assert '{ name: "logits" data_type: TYPE_FP32 dims: [ -1, 2 ] }' in text
    assert "max_batch_size: 16" in text and "preferred_batch_size: [ 4, 8 ]" in text  # 32 > max dropped
    assert "instance_group [ { count: 2 kind: KIND_CPU } ]" in text
    assert "tensorrt" not in text  # fp16 TensorRT is GPU only
    # The relevance embedder is always written (the repository serves the "grounded" rows too).
    assert names == ["truthlens_detector", "truthlens_embedder"]
    embedder = (tmp_path / "repo" / "truthlens_embedder" / "config.pbtxt").read_text(encoding="utf-8")
    assert 'platform: "onnxruntime_onnx"' in embedder and "TYPE_FP32" in embedder


def test_triton_repo_refuses_to_leave_the_embedder_out_silently(tiny_model_dir: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from truthlens.detector.export import triton_repo
    from truthlens.detector.manifest import ModelDirError

    monkeypatch.setattr(triton_repo, "EMBEDDER_DIR", tmp_path / "no-embedder-here")
    with pytest.raises(ModelDirError, match="embedder is missing.*--no-embedder"):
        write_triton_repo(str(tiny_model_dir), tmp_path / "repo", RepoOptions())


def test_triton_repo_fp16_adds_the_tensorrt_accelerator(tiny_model_dir: Path, tmp_path: Path) -> None:
    write_triton_repo(str(tiny_model_dir), tmp_path, RepoOptions(tensorrt_fp16=True, embedder=False))
    text = (tmp_path / "truthlens_detector" / "config.pbtxt").read_text(encoding="utf-8")
    assert 'name: "tensorrt"' in text and 'value: "FP16"' in text and "KIND_GPU" in text
    assert not (tmp_path / "truthlens_embedder").exists()


def test_export_cli_writes_a_repository_without_torch(tiny_model_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from truthlens.detector.export.cli import main

    assert main(["--triton-repo", str(tmp_path / "r"), "--model", str(tiny_model_dir), "--triton-kind", "cpu",
                 "--no-embedder"]) == 0
    assert '"models": ["truthlens_detector"]' in capsys.readouterr().out
    assert "KIND_CPU" in (tmp_path / "r" / "truthlens_detector" / "config.pbtxt").read_text(encoding="utf-8")
    assert main(["--triton-repo", str(tmp_path / "x"), "--model", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_model_config_lists_every_tensor_once() -> None:
    from truthlens.detector.export.triton_repo import _Tensor

    text = model_config("m", [_Tensor("a", "TYPE_INT64", (-1,)), _Tensor("b", "TYPE_INT32", (-1,))],
                        [_Tensor("out", "TYPE_FP32", (-1, 3))], RepoOptions(max_batch_size=4))
    assert text.count("name: \"a\"") == 1 and text.count("name: \"b\"") == 1
    # No preferred size fits under max_batch_size 4: the line is left out (Triton rejects larger ones).
    assert "max_batch_size: 4" in text and "preferred_batch_size" not in text


# ---------------------------------------------------------------- the server's model signature


def _metadata(inputs: list[tuple[str, str]], outputs: list[tuple[str, str, tuple[int, ...]]]) -> Any:
    from truthlens.detector.backends.oip import ModelMetadata, TensorSpec

    return ModelMetadata("truthlens_detector", "onnxruntime_onnx",
                         tuple(TensorSpec(n, t, (-1, -1)) for n, t in inputs),
                         tuple(TensorSpec(n, t, s) for n, t, s in outputs))


def test_signature_check_accepts_the_served_model_and_names_each_mismatch(tiny_model_dir: Path) -> None:
    from truthlens.detector.backends.remote import plan_io
    from truthlens.detector.manifest import load_manifest

    manifest = load_manifest(tiny_model_dir)  # labels: 2; inputs: input_ids
    io = plan_io(_metadata([("input_ids", "INT64")], [("logits", "FP32", (-1, -1, 2))]), manifest)
    assert io.inputs == (("input_ids", "INT64"),) and io.output == "logits"
    with pytest.raises(RemoteError) as info:
        plan_io(_metadata([("pixel_values", "FP32")], [("logits", "FP32", (-1, -1, 3)), ("x", "INT64", (-1,))]),
                manifest)
    message = str(info.value)
    assert info.value.reason == "remote_error"
    assert "'pixel_values'" in message and "no 'input_ids'" in message and "3 labels" in message
