"""The sentence embedder runs live calls' batches before the dry run's (``BACKGROUND``): a
background batch waits while a live call runs, at most a bounded time, and the vectors do not
depend on the priority. Real: the shipped embedder (ONNX Runtime), real threads."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

import numpy as np

from truthlens.detector.batcher import BACKGROUND
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.evidence.priority import PriorityGate


def _in_background(fn: Callable[[], object]) -> threading.Thread:
    """A thread that runs ``fn`` as the dry run's checks do (``BACKGROUND`` set in its context)."""
    context = contextvars.copy_context()
    context.run(BACKGROUND.set, True)
    return threading.Thread(target=context.run, args=(fn,))


def _pass(gate: PriorityGate, passed: threading.Event) -> None:
    gate.before_background_batch()
    passed.set()


def test_a_background_batch_waits_for_the_live_call_running() -> None:
    gate = PriorityGate(max_wait_s=30)
    passed = threading.Event()
    thread = _in_background(lambda: _pass(gate, passed))
    with gate.live():
        thread.start()
        assert not passed.wait(0.3)  # held back while the live call runs
    assert passed.wait(30)  # and goes as soon as it ends
    thread.join()


def test_a_background_batch_is_delayed_not_stopped() -> None:
    gate = PriorityGate(max_wait_s=0.05)
    passed = threading.Event()
    thread = _in_background(lambda: _pass(gate, passed))
    with gate.live():  # a live call that outlasts the bound
        thread.start()
        assert passed.wait(30)
    thread.join()


def test_the_vectors_do_not_depend_on_the_priority() -> None:
    texts = ["The Eiffel Tower was completed in 1889.", "It stands in Paris. " * 200]  # two windows
    live = OnnxEmbedder.load(cache_size=0)
    out: list[np.ndarray] = []
    thread = _in_background(lambda: out.append(live.embed_sync(texts)))
    thread.start()
    thread.join()
    np.testing.assert_allclose(out[0], live.embed_sync(texts), atol=1e-6)
