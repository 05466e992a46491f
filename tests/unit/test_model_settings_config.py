"""The per-model settings of the processor's own calls (``models.<name>``: max_tokens,
structured_output, stream, sampling): parsed into the endpoint, errors naming the key."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from truthlens.gateway.policy.config import parse_config
from truthlens.llm_wire import ChatCall, Endpoint, token_bound
from truthlens.options import ConfigError
from truthlens.testing import launch


def models(**judge: Any) -> dict[str, Endpoint]:
    doc = yaml.safe_load(launch.config_yaml(None, "http://127.0.0.1:8000/v1", models={"judge": judge}))
    return dict(parse_config(doc).models)


def test_defaults_stream_learn_the_structured_form_and_bound_by_role() -> None:
    ep = models()["judge"]
    assert ep.stream is True and ep.structured_output == "auto" and ep.sampling == () and ep.max_tokens == ()
    assert token_bound(ChatCall(model="judge", messages=(), role="verdict"), ep) == 256
    assert token_bound(ChatCall(model="judge", messages=(), role="something_new"), ep) == 512


def test_one_bound_or_one_per_role() -> None:
    one = models(max_tokens=200)["judge"]
    assert token_bound(ChatCall(model="judge", messages=(), role="judge", max_tokens=900), one) == 200
    per_role = models(max_tokens={"verdict": 64, "default": 300})["judge"]
    assert token_bound(ChatCall(model="judge", messages=(), role="verdict"), per_role) == 64
    assert token_bound(ChatCall(model="judge", messages=(), role="judge"), per_role) == 300
    assert token_bound(ChatCall(model="judge", messages=(), role="refine", max_tokens=40), per_role) == 40


def test_sampling_and_the_rest() -> None:
    ep = models(sampling={"temperature": 0.7, "seed": 11}, structured_output="json_object", stream=False)["judge"]
    assert dict(ep.sampling) == {"temperature": 0.7, "seed": 11}
    assert ep.structured_output == "json_object" and ep.stream is False


@pytest.mark.parametrize(("judge", "key"), [
    ({"max_tokens": 0}, "models.judge.max_tokens"),
    ({"max_tokens": {"verdikt": 10}}, "models.judge.max_tokens.verdikt"),
    ({"max_tokens": {"verdict": "many"}}, "models.judge.max_tokens.verdict"),
    ({"structured_output": "xml"}, "models.judge.structured_output"),
    ({"stream": "yes"}, "models.judge.stream"),
    ({"sampling": {"temperature": 3}}, "models.judge.sampling.temperature"),
    ({"sampling": {"top_k": 3}}, "models.judge.sampling.top_k"),
])
def test_a_wrong_value_names_its_key(judge: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        models(**judge)
    assert key in str(err.value)
