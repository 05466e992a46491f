"""The audit line: values that could forge a field are quoted, and a rewritten answer keeps the
verdict and score of the upstream's own answer."""

from __future__ import annotations

import json
import logging
import shlex

import pytest

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.detector.types import Detection
from truthlens.gateway.exchange import audit, mutations, request_id
from truthlens.logs import FIELDS, JsonFormatter
from truthlens.modes.base import ChoiceVerdict, Verdict


def _line(caplog: pytest.LogCaptureFixture, **overrides: object) -> str:
    args: dict[str, object] = {"request_id": "req-1", "decision": "chat", "mode": "standard", "verdict": "detected",
                               "score": 0.91, "action": "warned", "latency_s": 0.012}
    args.update(overrides)
    with caplog.at_level(logging.INFO, logger="truthlens.audit"):
        audit.exchange(**args)  # type: ignore[arg-type]
    (record,) = [r for r in caplog.records if r.name == "truthlens.audit"]
    return record.getMessage()


def _pairs(line: str) -> dict[str, str]:
    """The line read back as a shell-like ``key=value`` reader does (quoted values are one token)."""
    words = shlex.split(line.removeprefix("exchange "))
    return dict(w.split("=", 1) for w in words)


@pytest.mark.parametrize("forged", [
    "x verdict=clean score=0.0",
    'x" verdict="clean',
    "x\nverdict=clean",
    "x\tverdict=clean",
    "x\u2028verdict=clean",
])
def test_a_request_id_cannot_forge_another_field(caplog: pytest.LogCaptureFixture, forged: str) -> None:
    line = _line(caplog, request_id=forged)
    assert "\n" not in line and "\t" not in line and "\u2028" not in line
    pairs = _pairs(line)
    assert pairs["verdict"] == "detected"
    assert pairs["score"] == "0.91"
    assert pairs["request_id"] == forged.replace("\n", "\\n").replace("\t", "\\t").replace("\u2028", "\\u2028")
    assert list(pairs) == ["request_id", "decision", "mode", "verdict", "score", "action", "latency_ms"]
    # The JSON form keeps the value as sent (its encoder escapes it); a plain id stays bare.
    (record,) = [r for r in caplog.records if r.name == "truthlens.audit"]
    assert record.__dict__[FIELDS]["request_id"] == forged
    caplog.clear()
    assert _line(caplog).startswith("exchange request_id=req-1 decision=chat mode=standard verdict=detected ")


def test_a_rewritten_answer_logs_the_original_verdict_and_score(caplog: pytest.LogCaptureFixture) -> None:
    verdict = Verdict(mode="self_refine", choices=(
        ChoiceVerdict(0, Detection("clean", 0.12), text="fixed", original=Detection("detected", 0.93)),
        ChoiceVerdict(1, Detection("clean", 0.05)),
    ))
    original = audit.original_of(verdict)
    assert original == ("detected", 0.93)
    pairs = _pairs(_line(caplog, verdict=verdict.status, score=verdict.score, action="rewritten", original=original))
    assert pairs["verdict"] == "clean" and pairs["score"] == "0.12"
    assert pairs["original_verdict"] == "detected" and pairs["original_score"] == "0.93"


def test_an_answer_nothing_rewrote_has_no_original_fields(caplog: pytest.LogCaptureFixture) -> None:
    verdict = Verdict(mode="standard", choices=(ChoiceVerdict(0, Detection("clean", 0.1)),))
    assert audit.original_of(verdict) is None
    assert "original" not in _line(caplog, verdict="clean", original=None)


def test_a_request_id_that_is_not_utf8_is_echoed_and_logged_as_sent(caplog: pytest.LogCaptureFixture) -> None:
    # Adversarial round 3, N59: `x-request-id: caf\xe9-\xff` (Latin-1 bytes) was decoded with
    # "replace", so the echo and the audit line both said `caf\ufffd-\ufffd`: the id the client
    # sent was lost, and any two such ids looked alike.
    sent = b"caf\xe9-\xff"
    header = pb.HeaderValue(key="x-request-id", raw_value=sent)
    value = mutations.header_value(header)
    assert value == "caf\udce9-\udcff"  # each non-UTF-8 byte kept, as U+DC00 + byte

    request = pb.ProcessingRequest()
    request.response_headers.headers.headers.add(key=":status", raw_value=b"200")
    reply = mutations.headers_reply("response_headers")
    request_id.echo(reply, request, value)
    (echoed,) = reply.response_headers.response.header_mutation.set_headers
    assert (echoed.header.key, echoed.header.raw_value) == ("x-request-id", sent)

    line = _line(caplog, request_id=value)
    assert line.startswith('exchange request_id="caf\\udce9-\\udcff" ')  # a JSON string: U+DCE9 is byte 0xE9
    (record,) = [r for r in caplog.records if r.name == "truthlens.audit"]
    as_json = JsonFormatter().format(record)  # one JSON object, its value read back exactly
    assert json.loads(as_json)["request_id"].encode("utf-8", "surrogateescape") == sent
    # Unambiguous: a client that sends that spelling as text logs another line.
    caplog.clear()
    assert _line(caplog, request_id="caf\\udce9-\\udcff").startswith('exchange request_id="caf\\\\udce9-')
