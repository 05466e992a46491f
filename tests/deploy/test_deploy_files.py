"""The deployment files agree with the code they deploy.

No container engine or cluster runs here, so this checks what can be checked without one:
every file parses; the images, compose file and manifests start the real CLI with flags its
parser accepts and on the ports they expose and probe; the processor configs load with the real
config loader; the real Envoy binary accepts the Envoy configs; the dashboard queries only
metrics the server registers. Nothing is scripted.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from shipped_inputs import require_shipped_model

from truthlens import cli
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.config import load_config
from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
NAMESPACE = "truthlens"


def load_docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def k8s_objects() -> dict[tuple[str, str], dict[str, Any]]:
    objects = {}
    for path in sorted((K8S / "base").glob("*.yaml")):
        for doc in load_docs(path):
            if "kind" in doc and doc["kind"] != "Kustomization":
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def serve_args(argv: list[str]) -> Any:
    """Parse ``argv`` with the real CLI parser (argparse exits on an unknown flag)."""
    ns = cli._parser().parse_args(argv)
    assert ns.command == "serve"
    return ns


def port_of(listen: str) -> int:
    return int(listen.rpartition(":")[2])


# -- every file parses ------------------------------------------------------------------------


def test_every_yaml_and_json_file_in_deploy_parses() -> None:
    files = sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    assert len(files) >= 15
    for path in files:
        docs = [json.loads(path.read_text(encoding="utf-8"))] if path.suffix == ".json" else load_docs(path)
        assert docs, f"{path} is empty"


# -- images -----------------------------------------------------------------------------------


def dockerfile(name: str) -> dict[str, list[str]]:
    """Instructions of a Dockerfile (continuation lines joined), by keyword."""
    text = (DEPLOY / "docker" / name).read_text(encoding="utf-8")
    out: dict[str, list[str]] = {}
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            out.setdefault(keyword.upper(), []).append(rest.strip())
    return out


@pytest.mark.parametrize("name", ["Dockerfile.cpu", "Dockerfile.gpu"])
def test_dockerfile_runs_the_real_cli_on_the_exposed_ports(name: str) -> None:
    d = dockerfile(name)
    assert json.loads(d["ENTRYPOINT"][-1]) == ["truthlens"]
    ns = serve_args(json.loads(d["CMD"][-1]))
    exposed = {int(p) for line in d["EXPOSE"] for p in line.split()}
    assert {port_of(ns.listen), port_of(ns.metrics_listen)} == exposed
    assert ns.listen.startswith("0.0.0.0:") and ns.metrics_listen.startswith("0.0.0.0:")
    # The health check asks the gRPC health service on the serving port.
    check = d["HEALTHCHECK"][-1]
    assert "healthcheck.py" in check and f"127.0.0.1:{port_of(ns.listen)}" in check
    # Runs as a non-root user; every COPY source exists in the repository.
    assert d["USER"][-1] not in ("root", "0")
    for line in d["COPY"]:
        if line.startswith("--from"):
            continue
        *sources, _dest = line.split()
        for src in sources:
            assert (REPO / src).exists(), f"{name}: COPY {src} does not exist"
    config_copy = next(line for line in d["COPY"] if line.endswith(ns.config))
    load_config(REPO / config_copy.split()[0])


def test_gpu_image_installs_the_gpu_extra_and_keeps_only_onnxruntime_gpu() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^gpu = \[.*onnxruntime-gpu', pyproject, re.MULTILINE)
    run = " ".join(dockerfile("Dockerfile.gpu")["RUN"])
    assert "'.[gpu]'" in run and "pip uninstall -y onnxruntime" in run and "CUDAExecutionProvider" in run
    assert "cudnn" in dockerfile("Dockerfile.gpu")["FROM"][0]


def test_healthcheck_script_reports_a_real_processor(tmp_path: Path) -> None:
    """The image's health check against the real server: 0 when SERVING, 1 when nothing listens."""
    require_shipped_model()  # committed: missing, the image's check has nothing to serve
    script = DEPLOY / "docker" / "healthcheck.py"
    config = tmp_path / "config.yaml"
    config.write_text(launch.config_yaml(None, "http://127.0.0.1:9/v1"), encoding="utf-8")
    target = f"127.0.0.1:{launch.free_port()}"
    child = launch.start_processor(config, target, tmp_path / "processor.log")
    try:
        launch.wait_processor(target, child, timeout_s=60)
        ok = subprocess.run([sys.executable, str(script), target], capture_output=True, text=True, timeout=20, check=False)
        assert ok.returncode == 0, ok.stderr
        assert "SERVING" in ok.stdout
    finally:
        child.stop()
    down = subprocess.run([sys.executable, str(script), target], capture_output=True, text=True, timeout=20, check=False)
    assert down.returncode == 1 and "unhealthy" in down.stderr


# -- Envoy configs ----------------------------------------------------------------------------


def ext_proc_filter(doc: dict[str, Any]) -> dict[str, Any]:
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return next(f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_proc")


def cluster_address(doc: dict[str, Any], name: str) -> tuple[str, int]:
    cluster = next(c for c in doc["static_resources"]["clusters"] if c["name"] == name)
    sa = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    return sa["address"], sa["port_value"]


def k8s_envoy_config() -> dict[str, Any]:
    return yaml.safe_load(k8s_objects()[("ConfigMap", "envoy-config")]["data"]["envoy.yaml"])


def deploy_envoy_configs() -> dict[str, dict[str, Any]]:
    return {
        "compose": yaml.safe_load((DEPLOY / "compose" / "envoy.yaml").read_text(encoding="utf-8")),
        "k8s": k8s_envoy_config(),
    }


@pytest.mark.parametrize("where", ["compose", "k8s"])
def test_envoy_config_is_accepted_by_the_real_envoy(where: str, tmp_path: Path) -> None:
    path = tmp_path / "envoy.yaml"
    path.write_text(yaml.safe_dump(deploy_envoy_configs()[where]), encoding="utf-8")
    result = subprocess.run(
        [launch.envoy_binary(), "--mode", "validate", "-c", str(path), "--disable-hot-restart"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "OK" in result.stdout + result.stderr


@pytest.mark.parametrize("where", ["compose", "k8s"])
def test_envoy_config_keeps_the_shipped_ext_proc_filter(where: str) -> None:
    shipped = yaml.safe_load(launch.SHIPPED_ENVOY_CONFIG.read_text(encoding="utf-8"))
    doc = deploy_envoy_configs()[where]
    assert ext_proc_filter(doc) == ext_proc_filter(shipped)
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    shipped_hcm = shipped["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    assert hcm["route_config"] == shipped_hcm["route_config"]
    processor = next(c for c in doc["static_resources"]["clusters"] if c["name"] == "truthlens_extproc")
    assert "grpc_health_check" in processor["health_checks"][0]


def test_compose_envoy_targets_the_compose_services() -> None:
    compose = load_docs(DEPLOY / "compose" / "docker-compose.yaml")[0]
    doc = deploy_envoy_configs()["compose"]
    host, port = cluster_address(doc, "truthlens_extproc")
    assert host in compose["services"]
    assert port == port_of(serve_args(compose["services"]["processor"]["command"]).listen)
    upstream, _ = cluster_address(doc, "llm_upstream")
    assert upstream in compose["services"]


# -- docker compose ---------------------------------------------------------------------------


def test_compose_services_health_checks_and_mounts() -> None:
    compose = load_docs(DEPLOY / "compose" / "docker-compose.yaml")[0]
    services = compose["services"]
    assert {"envoy", "processor", "vllm"} <= set(services)
    assert services["envoy"]["image"].startswith("envoyproxy/envoy:")
    assert services["vllm"]["image"].startswith("vllm/vllm-openai:")
    assert "--model" in services["vllm"]["command"]
    devices = services["vllm"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    processor = services["processor"]
    ns = serve_args(processor["command"])
    assert ns.workers >= 1
    # The probe asks the metrics port's /readyz (ready once the detector is loaded).
    assert f"127.0.0.1:{port_of(ns.metrics_listen)}/readyz" in " ".join(processor["healthcheck"]["test"])
    assert processor["build"]["dockerfile"] == "deploy/docker/Dockerfile.cpu"
    assert (DEPLOY / "compose" / processor["build"]["context"] / processor["build"]["dockerfile"]).is_file()
    for name in ("envoy", "processor", "vllm"):
        assert "healthcheck" in services[name], name
    # Drain time fits inside the stop grace period.
    assert float(processor["stop_grace_period"].rstrip("s")) > ns.grace_s
    mounted_config = None
    for service in services.values():
        for volume in service.get("volumes", []):
            src, dest = volume.split(":")[:2]
            if src.startswith("."):
                assert (DEPLOY / "compose" / src).exists(), volume
                if Path(ns.config).parent.as_posix() == dest:
                    mounted_config = DEPLOY / "compose" / src / Path(ns.config).name
    assert mounted_config is not None, "the processor's --config is not mounted"
    config = load_config(mounted_config)
    assert all("vllm:8000" in m.base_url for m in config.models.values())


# -- Kubernetes -------------------------------------------------------------------------------


def processor_pod() -> dict[str, Any]:
    return k8s_objects()[("Deployment", "truthlens-extproc")]["spec"]["template"]


def test_kustomization_lists_existing_files_and_the_image() -> None:
    kustomization = load_docs(K8S / "base" / "kustomization.yaml")[0]
    assert kustomization["namespace"] == NAMESPACE
    for resource in kustomization["resources"]:
        assert (K8S / "base" / resource).is_file(), resource
    images = {i["name"] for i in kustomization["images"]}
    containers = processor_pod()["spec"]["containers"]
    assert containers[0]["image"] in images


def test_processor_deployment_ports_probes_and_sizing() -> None:
    objects = k8s_objects()
    pod = processor_pod()
    container = pod["spec"]["containers"][0]
    ns = serve_args(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": port_of(ns.listen), "metrics": port_of(ns.metrics_listen)}
    # Readiness on /readyz (503 until the detector is loaded), liveness on /healthz: the metrics port.
    for probe, path in (("startupProbe", "/readyz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics"}, probe
    # One worker per requested core; the drain fits in the termination grace period.
    assert ns.workers == int(container["resources"]["requests"]["cpu"])
    assert pod["spec"]["terminationGracePeriodSeconds"] > ns.grace_s + 5
    # The config is the ConfigMap mounted as a directory (no subPath: updates reach the file).
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(Path(ns.config).parent))
    assert "subPath" not in mount
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    configmap = objects[("ConfigMap", volume["configMap"]["name"])]
    assert Path(ns.config).name in configmap["data"]
    # The pod's labels are what the Service, PDB and HPA select.
    labels = pod["metadata"]["labels"]
    service = objects[("Service", "truthlens-extproc")]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["clusterIP"] == "None"
    assert {p["port"] for p in service["spec"]["ports"]} == set(ports.values())
    pdb = objects[("PodDisruptionBudget", "truthlens-extproc")]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    hpa = objects[("HorizontalPodAutoscaler", "truthlens-extproc")]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "truthlens-extproc"
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_k8s_processor_config_loads(tmp_path: Path) -> None:
    configmap = k8s_objects()[("ConfigMap", "truthlens-config")]
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"], encoding="utf-8")
    config = load_config(path)
    assert config.detector.provider == "auto"
    hosts = {m.base_url for m in config.models.values()}
    assert all(f".{NAMESPACE}.svc.cluster.local:" in h for h in hosts)
    # The backend the config re-asks is the one Envoy routes to.
    upstream_host, upstream_port = cluster_address(k8s_envoy_config(), "llm_upstream")
    assert all(f"{upstream_host}:{upstream_port}" in h for h in hosts)


def test_k8s_envoy_targets_the_processor_service() -> None:
    objects = k8s_objects()
    host, port = cluster_address(k8s_envoy_config(), "truthlens_extproc")
    assert host == f"truthlens-extproc.{NAMESPACE}.svc.cluster.local"
    assert port == port_of(serve_args(processor_pod()["spec"]["containers"][0]["args"]).listen)
    envoy = objects[("Deployment", "envoy")]["spec"]["template"]["spec"]
    assert envoy["containers"][0]["image"].startswith("envoyproxy/envoy:")
    volume = next(v for v in envoy["volumes"] if "configMap" in v)
    assert volume["configMap"]["name"] == "envoy-config"
    listener = k8s_envoy_config()["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"]
    assert listener in {p["containerPort"] for p in envoy["containers"][0]["ports"]}


def test_gpu_overlay_requests_a_gpu_for_the_processor() -> None:
    overlay = K8S / "overlays" / "gpu"
    kustomization = load_docs(overlay / "kustomization.yaml")[0]
    assert (overlay / kustomization["resources"][0] / "kustomization.yaml").is_file()
    assert {i["newTag"] for i in kustomization["images"]} == {"0.1.0-gpu"}
    patch = load_docs(overlay / kustomization["patches"][0]["path"])[0]
    assert (patch["kind"], patch["metadata"]["name"]) in k8s_objects()
    container = patch["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == processor_pod()["spec"]["containers"][0]["name"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1


# -- dashboard and collector ------------------------------------------------------------------


def exported_samples() -> tuple[set[str], set[str]]:
    """(metric family names, sample names) of everything the server registers."""
    families, samples = set(), set()
    for metric in Telemetry().registry.collect():
        if not metric.name.startswith("truthlens_"):
            continue  # process_*: the client library's standard process metrics, not the product's
        families.add(metric.name)
        suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
                    "gauge": ("",)}[metric.type]
        samples |= {metric.name + s for s in suffixes}
    return families, samples


def test_dashboard_queries_only_exported_metrics_and_covers_them_all() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "truthlens-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\btruthlens_[a-z_]+", expr)}
    families, samples = exported_samples()
    assert len(families) >= 10
    assert used <= samples, f"not exported: {sorted(used - samples)}"
    covered = {f for f in families if any(u == f or u.startswith(f + "_") for u in used)}
    assert covered == families, f"no panel for {sorted(families - covered)}"


def test_collector_pipeline_receives_otlp_and_batches() -> None:
    collector = load_docs(DEPLOY / "otel" / "collector.yaml")[0]
    traces = collector["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"] and "batch" in traces["processors"]
    for kind in ("receivers", "processors", "exporters"):
        assert set(traces[kind]) <= set(collector[kind])
    assert collector["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    compose = load_docs(DEPLOY / "compose" / "docker-compose.yaml")[0]
    env = compose["services"]["processor"]["environment"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith(":4317")
    assert shlex.split(" ".join(compose["services"]["otel-collector"]["command"]))[-1].endswith("collector.yaml")


def test_compose_and_k8s_processor_configs_differ_only_in_the_backend_address() -> None:
    compose = yaml.safe_load((DEPLOY / "compose" / "config" / "config.yaml").read_text(encoding="utf-8"))
    k8s = yaml.safe_load(k8s_objects()[("ConfigMap", "truthlens-config")]["data"]["config.yaml"])
    assert compose["models"]["default"]["base_url"] == "http://vllm:8000/v1"
    k8s["models"]["default"]["base_url"] = compose["models"]["default"]["base_url"]
    assert compose == k8s
