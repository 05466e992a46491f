"""The Triton deployment files (k8s overlay, compose override) agree with the code they deploy.

No cluster or container engine runs here: the repository the init step writes is written by
the real export CLI with the same arguments, the processor configs load with the real loader
and point at the Triton service's gRPC port, and probes use the v2 health paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from truthlens.detector.export.cli import main as export_main
from truthlens.gateway.policy.config import load_config, parse_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
OVERLAY = DEPLOY / "k8s" / "overlays" / "triton"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs(OVERLAY / "triton.yaml")}


def test_overlay_lists_existing_files_on_top_of_base() -> None:
    kustomization = docs(OVERLAY / "kustomization.yaml")[0]
    for resource in kustomization["resources"]:
        target = OVERLAY / resource
        assert target.is_file() or (target / "kustomization.yaml").is_file(), resource
    for patch in kustomization["patches"]:
        assert (OVERLAY / patch["path"]).is_file()


def test_triton_pod_gets_the_exported_repository_and_v2_probes(tmp_path: Path) -> None:
    pod = objects()[("Deployment", "triton")]["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    args = list(init["args"])
    assert args[0] == "export"
    repo_at = args[args.index("--triton-repo") + 1]
    # The same arguments, run by the real CLI, write a loadable repository.
    args[args.index("--triton-repo") + 1] = str(tmp_path / "models")
    assert export_main(args[1:]) == 0
    assert (tmp_path / "models" / "truthlens_detector" / "config.pbtxt").is_file()
    (triton,) = pod["containers"]
    assert f"--model-repository={repo_at}" in triton["args"]
    assert triton["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert triton["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == 1
    ports = {p["name"]: p["containerPort"] for p in triton["ports"]}
    assert ports == {"http": 8000, "grpc": 8001, "metrics": 8002}


def test_triton_hpa_scales_on_queue_time() -> None:
    hpa = objects()[("HorizontalPodAutoscaler", "triton")]["spec"]
    assert hpa["scaleTargetRef"]["name"] == "triton"
    (metric,) = hpa["metrics"]
    assert metric["type"] == "Pods" and "queue" in metric["pods"]["metric"]["name"]


def test_overlay_processor_config_targets_the_triton_service() -> None:
    patch = docs(OVERLAY / "processor-config-remote.yaml")[0]
    config = parse_config(yaml.safe_load(patch["data"]["config.yaml"]))
    remote = config.detector.remote
    assert config.detector.backend == "remote" and remote is not None
    service = objects()[("Service", "triton")]
    grpc_port = {p["name"]: p["port"] for p in service["spec"]["ports"]}["grpc"]
    assert remote.url == f"triton.truthlens.svc.cluster.local:{grpc_port}"
    assert remote.model_name == "truthlens_detector"
    assert remote.timeout_ms / 1000 <= config.hallucination.budgets.detection_s


def test_compose_override_mounts_a_remote_config_and_probes_triton() -> None:
    override = docs(DEPLOY / "compose" / "docker-compose.triton.yaml")[0]["services"]
    src, dest = override["processor"]["volumes"][0].split(":")[:2]
    config = load_config(DEPLOY / "compose" / src / "config.yaml")
    assert dest == "/etc/truthlens" and config.detector.backend == "remote"
    assert config.detector.remote is not None and config.detector.remote.url == "triton:8001"
    assert "/v2/health/ready" in " ".join(override["triton"]["healthcheck"]["test"])
    assert override["model-repository"]["command"][:3] == ["export", "--triton-repo", "/models"]
