"""``truthlens init`` and the one-line messages of ``check-config``: what a newcomer types first.

Real: the ``truthlens`` CLI entry point in-process, the packaged starter files and example configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from truthlens import cli
from truthlens.starter import ENVOY

ROOT = Path(__file__).resolve().parents[2]


def test_init_twice_leaves_identical_files_and_refuses_only_a_different_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["init", str(tmp_path / "gw")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert cli.main(["init", str(tmp_path / "gw")]) == 0  # the same files again: nothing to overwrite
    out = capsys.readouterr().out
    assert out.count("unchanged") == 4 and "wrote" not in out
    (tmp_path / "gw" / "envoy.yaml").write_text("# edited\n", encoding="utf-8")
    assert cli.main(["init", str(tmp_path / "gw")]) == 1
    err = capsys.readouterr().err
    assert "envoy.yaml already exists with other contents" in err and "truthlens init DIR" in err
    assert (tmp_path / "gw" / "envoy.yaml").read_text(encoding="utf-8") == "# edited\n"


def test_init_into_a_folder_of_a_checkout_then_check_config_as_the_readme_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # A checkout's root holds the tracked envoy.yaml (another text than init writes): init . refuses,
    # init into a folder works, and check-config agrees with what it wrote.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envoy.yaml").write_bytes(ENVOY.read_bytes())
    assert cli.main(["init", "."]) == 1
    capsys.readouterr()
    assert cli.main(["init", "my-gateway"]) == 0
    capsys.readouterr()
    assert cli.main(["check-config", "my-gateway/config.yaml", "--envoy", "my-gateway/envoy.yaml"]) == 0
    captured = capsys.readouterr()
    assert "ok (digest" in captured.out and "warning" not in captured.err


@pytest.mark.parametrize("example", ["llm-detector", "cascade"])
def test_the_generative_detector_examples_say_what_to_start_on_its_port(
    example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["init", str(tmp_path), "--example", example]) == 0
    out = capsys.readouterr().out
    assert "truthlens upstream --demo --port 8000 &" in out
    assert "truthlens upstream --demo --port 8001 &   # a scripted stand-in for the span detector" in out
    assert "envoy -c envoy.yaml -l warning --disable-hot-restart" in out


def test_with_a_real_upstream_only_the_detector_port_gets_a_stand_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["init", str(tmp_path), "--example", "cascade", "--upstream", "https://llm.example:8443/v1"]) == 0
    out = capsys.readouterr().out
    assert "--port 8000" not in out and "--port 8001" in out


def test_a_missing_config_is_named_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check-config", "config.yaml"]) == 1
    assert capsys.readouterr().err.strip() == "config.yaml: cannot read: No such file or directory"


def test_check_config_on_envoy_yaml_says_it_is_an_envoy_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check-config", str(ROOT / "envoy.yaml")]) == 1
    err = capsys.readouterr().err
    assert "unknown key" in err
    assert "this looks like an Envoy bootstrap file: check-config takes the processor's config" in err


def test_envoy_option_given_the_processor_config_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(ROOT / "configs" / "config.yaml")
    assert cli.main(["check-config", config, "--envoy", config]) == 0  # warnings only
    err = capsys.readouterr().err
    assert "is not an Envoy bootstrap: it has no static_resources (it looks like the processor's config" in err
    assert "KeyError" not in err


def test_upstream_and_serve_help_name_their_command_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["upstream", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: truthlens upstream") and "(default: 8000)" in out
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 127.0.0.1:50051)" in out and "(default: 127.0.0.1:9190)" in out and "(default: 1)" in out


def test_a_misspelt_route_key_is_named_with_the_key_it_resembles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import yaml

    doc = yaml.safe_load((ROOT / "configs" / "config.yaml").read_text(encoding="utf-8"))
    route = next(d for d in doc["decisions"] if d.get("plugins"))["plugins"][0]["configuration"]
    route["mdoe"] = "standard"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["check-config", str(tmp_path / "config.yaml")]) == 1
    err = capsys.readouterr().err
    assert ".mdoe: unknown key (did you mean 'mode'?)" in err and "takes no options" not in err
    doc["detector"]["provder"] = "cpu"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["check-config", str(tmp_path / "config.yaml")]) == 1
    assert "detector.provder: unknown key (did you mean 'provider'? expected one of" in capsys.readouterr().err


def test_the_demo_names_a_taken_port_and_suggests_free_ports(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from truthlens import demo
    from truthlens.testing import launch

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=port, processor=launch.free_port(),
                                  admin=launch.free_port())
        assert demo.busy_ports(ports) == [f"port {port} (the scripted upstream)"]
        # The demo's shipped ports, one of them taken: it stops before starting anything, saying why.
        monkeypatch.setattr(launch, "EnvoyPorts", lambda: ports)
        from truthlens.starter import CONFIG

        assert demo.run_demo(CONFIG) == 1
        out = capsys.readouterr().out
        assert f"port {port} (the scripted upstream) already in use" in out and "truthlens demo --free-ports" in out
        assert "starting" not in out
