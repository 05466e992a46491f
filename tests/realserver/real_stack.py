"""The stack of the real-model-server tests: Envoy → processor → llama.cpp server (see conftest)."""

from __future__ import annotations

from pathlib import Path

from harness import Stack

from truthlens.testing import launch, llama_server


class RealServerStack(Stack):
    """Envoy → processor → llama.cpp server on the upstream port (the scripted upstream never starts)."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, None)
        self.llama: llama_server.LlamaServer | None = None

    def start(self) -> None:
        python = llama_server.server_python()
        assert python is not None, llama_server.unavailable_reason()
        self.llama = llama_server.LlamaServer(workdir=self.workdir, port=self.ports.upstream, python=python)
        self.llama.start()
        self.config_path.write_text(self.config_yaml(), encoding="utf-8")
        self.start_processor()
        self._children["envoy"] = launch.start_envoy(launch.render_envoy_config(self.ports), self.workdir)
        launch.wait_envoy(self.ports.admin, self._children["envoy"])
        self.wait_processor()

    def stop(self) -> None:
        super().stop()
        if self.llama is not None:
            self.llama.stop()
