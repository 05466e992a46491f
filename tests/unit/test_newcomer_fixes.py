"""What a newcomer met on day one, each fixed where a test can hold it: the demo's port check
does not count a port whose last connections wait in TIME-WAIT (only a listener), a flag's help
does not read "(default: True)", init's next steps start Envoy beside another one on the host,
the JSON Schema refuses a typo'd condition key as check-config does, and the configuration
reference gives the detector's calibrated keys no fixed default."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from truthlens import cli, demo
from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]


def _time_wait_port() -> int:
    """A loopback port with no listener whose server side closed first: it waits in TIME-WAIT. The
    server binds as Envoy, gRPC and aiohttp do (SO_REUSEADDR), as the first demo's did."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the side that closes first keeps the TIME-WAIT entry
        client.close()
    return port


def test_a_port_in_time_wait_is_not_busy_but_a_listener_is() -> None:
    port = _time_wait_port()
    with socket.socket() as plain:  # what the demo's check did: a bind without SO_REUSEADDR fails
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))
    ports = launch.EnvoyPorts(listener=launch.free_port(), upstream=port, processor=launch.free_port(),
                              admin=launch.free_port())
    assert demo.busy_ports(ports) == []
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert demo.busy_ports(ports) == [f"port {port} (the scripted upstream)"]


def test_a_flags_help_never_shows_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: True)" not in out and "(default: False)" not in out
    assert "--no-check-endpoint turn off POST /v1/check" in out and "(default: on)" in out
    assert "(default: 1)" in out  # options with a value still show theirs (--workers)


def test_inits_next_steps_start_envoy_beside_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", str(tmp_path)]) == 0
    assert "envoy -c envoy.yaml -l warning --disable-hot-restart" in capsys.readouterr().out


def test_the_schema_refuses_a_typod_condition_key_as_check_config_does(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "truthlens-config.schema.json").read_text(encoding="utf-8"))
    doc = yaml.safe_load((REPO / "configs" / "config.yaml").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(doc))
    doc["decisions"][0]["rules"]["conditions"][0] = {"type": "path", "prefx": "/v1/chat/completions"}
    assert any("prefx" in e.message for e in validator.iter_errors(doc))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["check-config", str(config)]) != 0


def test_the_reference_gives_calibrated_keys_no_fixed_default() -> None:
    reference = (REPO / "docs" / "configuration-reference.md").read_text(encoding="utf-8")
    (row,) = [line for line in reference.splitlines() if line.startswith("| `token_threshold` |")]
    assert "0.5" not in row.split("|")[3]
