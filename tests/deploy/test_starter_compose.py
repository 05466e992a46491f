"""The compose file ``truthlens init`` writes works from the wheel alone: its image is built from
the installed wheel on a stock Python image, the upstream answers the demo's questions, and the
config is mounted as a folder (hot reload). Docker is not run here; the file's content is checked
against the other starter files and the package's own name.

Real: the packaged starter files, ``truthlens init`` in-process."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli.main(["init", str(tmp_path)]) == 0
    capsys.readouterr()
    compose = yaml.safe_load((tmp_path / "docker-compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(compose, dict)
    return compose


def test_the_image_is_built_from_the_installed_wheel_on_a_stock_python_image(written: dict[str, Any]) -> None:
    dist = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    wheel_prefix = dist.replace("-", "_")  # a wheel's file name: truthlens_extproc-0.1.0-py3-none-any.whl
    for name in ("processor", "upstream"):
        service = written["services"][name]
        dockerfile = service["build"]["dockerfile_inline"]
        assert re.search(r"^FROM python:3\.\d+-slim$", dockerfile, re.M)
        assert f"COPY {wheel_prefix}-*.whl /tmp/" in dockerfile and "pip install" in dockerfile
        assert 'ENTRYPOINT ["truthlens"]' in dockerfile
        assert service["build"]["context"] == "."
        assert service["image"].startswith("${TRUTHLENS_IMAGE:-")  # an image of your own still works


def test_the_upstream_is_the_demo_script_and_the_config_folder_is_mounted(written: dict[str, Any]) -> None:
    services = written["services"]
    assert "--demo" in services["upstream"]["command"]
    processor = services["processor"]
    assert processor["volumes"] == ["./:/etc/truthlens:ro"]
    command = processor["command"]
    assert command[command.index("--config") + 1] == "/etc/truthlens/config.yaml"
    metrics = command[command.index("--metrics-listen") + 1]
    assert f"http://{metrics}/readyz" in " ".join(processor["healthcheck"]["test"])
    envoy = services["envoy"]
    assert envoy["volumes"] == ["./:/etc/truthlens:ro"]
    assert envoy["command"][envoy["command"].index("-c") + 1] == "/etc/truthlens/envoy.yaml"


def test_with_a_real_upstream_the_scripted_one_is_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", str(tmp_path), "--upstream", "https://llm.example:8443/v1"]) == 0
    compose = yaml.safe_load((tmp_path / "docker-compose.yaml").read_text(encoding="utf-8"))
    assert set(compose["services"]) == {"processor", "envoy"}
    assert "upstream" not in compose["services"]["envoy"]["depends_on"]
