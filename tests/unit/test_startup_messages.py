"""What an operator reads when the processor cannot start or a command is mistyped: the port that
is taken, the line of a YAML syntax error (and the file once), the installed version.

Everything here is real: the ``truthlens`` command in a subprocess, real sockets; no model is
loaded (both bind failures happen before the detector loads)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from truthlens import __version__, cli

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "config.yaml"


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "truthlens", "serve", "--config", str(CONFIG), *flags],
        capture_output=True, text=True, timeout=120,
    )


def test_a_taken_metrics_port_is_named(taken_port: int) -> None:
    done = _serve("--listen", "127.0.0.1:0", "--metrics-listen", f"127.0.0.1:{taken_port}")
    assert done.returncode == 1
    assert f"the metrics server cannot listen on 127.0.0.1:{taken_port} (--metrics-listen): " \
           "Address already in use" in done.stderr


def test_a_taken_grpc_port_is_named(taken_port: int) -> None:
    done = _serve("--listen", f"127.0.0.1:{taken_port}", "--metrics-listen", "off")
    assert done.returncode == 1
    assert f"the gRPC server cannot listen on 127.0.0.1:{taken_port} (--listen)" in done.stderr
    assert "GRPC_VERBOSITY" not in done.stderr


def test_a_yaml_syntax_error_names_the_file_once_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("version: 1\ndecisions:\n  - name: x\n    match: [a\n  b: c\n", encoding="utf-8")
    assert cli.main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"{bad}: line 5, column 4: invalid YAML: expected ',' or ']', but got ':' "
                   "(while parsing a flow sequence started at line 4, column 12)")


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"truthlens {__version__}"
