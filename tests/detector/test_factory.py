"""Backend selection and settings checks; the ONNX provider choice.

Nothing is scripted: provider choice is a pure function of what onnxruntime offers.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from truthlens.detector.backends.factory import backend_names, check_settings, create_detector
from truthlens.detector.backends.onnx import CPU, CUDA, choose_providers
from truthlens.detector.manifest import ModelDirError
from truthlens.detector.types import ConfirmSettings, DetectorSettings, LlmSettings
from truthlens.llm import Endpoint


def test_unknown_backend_and_bad_settings_name_the_field() -> None:
    assert "onnx" in backend_names()
    with pytest.raises(ValueError, match="backend 'candle' is unknown"):
        create_detector(DetectorSettings(backend="candle"))
    with pytest.raises(ValueError, match="token_threshold 1.5") as info:
        check_settings(DetectorSettings(token_threshold=1.5, max_batch_size=0))
    assert "max_batch_size must be >= 1" in str(info.value)


def test_missing_model_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match="does not exist"):
        create_detector(DetectorSettings(model_dir=str(tmp_path / "absent")))


def test_provider_choice() -> None:
    assert choose_providers("auto", [CUDA, CPU]) == [CUDA, CPU]
    assert choose_providers("auto", [CPU]) == [CPU]
    assert choose_providers("cpu", [CUDA, CPU]) == [CPU]
    assert choose_providers("cuda", [CUDA, CPU]) == [CUDA, CPU]
    assert choose_providers("cuda", ["AzureExecutionProvider", CPU]) == [CPU]


def test_serving_imports_no_torch_or_transformers(tiny_model_dir: Path) -> None:
    code = (
        "import sys, asyncio\n"
        "from truthlens.detector.backends.factory import create_detector\n"
        "from truthlens.detector.types import DetectorSettings, DetectionInput\n"
        "import truthlens.detector.cli\n"
        f"d = create_detector(DetectorSettings(model_dir={str(tiny_model_dir)!r}))\n"
        "r = asyncio.run(d.detect(DetectionInput(('a',), 'q', 'Lyon'), threshold=0.5))\n"
        "assert r.detected\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'lettucedetect'))\n"
        "print(bad)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_llm_settings_are_checked_and_a_confirmer_follows_only_an_encoder() -> None:
    assert "llm" in backend_names()
    with pytest.raises(ValueError, match="needs llm settings"):
        check_settings(DetectorSettings(backend="llm"))
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="max_tokens"):
        check_settings(DetectorSettings(backend="llm", llm=LlmSettings("m", endpoint, max_tokens=0)))
    confirmer = DetectorSettings(backend="llm", llm=LlmSettings("m", endpoint, role="confirm"))
    check_settings(DetectorSettings(confirm=ConfirmSettings(detector=confirmer)))  # onnx + llm: fine
    with pytest.raises(ValueError, match="confirm follows an encoder backend"):
        check_settings(dataclasses.replace(confirmer, confirm=ConfirmSettings(detector=confirmer)))
