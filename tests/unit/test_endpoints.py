"""The API an exchange speaks is picked from its path, and each endpoint reads its own bodies.
Pure functions; nothing is scripted."""

from __future__ import annotations

import json

import pytest

from truthlens.gateway.apis.chat.body import ContextSettings
from truthlens.gateway.apis.endpoints import CHAT, RESPONSES, for_path
from truthlens.gateway.apis.interface import BodyError


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/chat/completions", "chat"),
        ("/v1/responses", "responses"),
        ("/v1/responses?stream=true", "responses"),
        ("/v1/responses/", "responses"),
        ("/openai/v1/responses", "responses"),  # behind a path prefix
        # Spellings an upstream may route as /v1/responses: read as path conditions read them.
        ("/v1/Responses", "responses"),
        ("/V1/RESPONSES/", "responses"),
        ("/v1/responses;x", "responses"),
        ("/v1/responses;jsessionid=1/", "responses"),
        ("/v1/responses/resp_123", "chat"),  # retrieving a stored response is not a create call
        ("/v1/completions", "completions"),  # the legacy completions API
        ("/openai/v1/Completions/", "completions"),
        ("/v1/chat/completions/", "chat"),
        ("/v1/embeddings", "chat"),  # everything else is read as before the other APIs existed
        ("", "chat"),
    ],
)
def test_the_path_picks_the_endpoint(path: str, name: str) -> None:
    assert for_path(path).name == name


def test_each_endpoint_reads_its_own_request_shape() -> None:
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "q"}],
                       "truthlens_context": ["p"]}).encode()
    responses = json.dumps({"model": "m", "input": "q", "truthlens_context": ["p"]}).encode()
    for endpoint, body in ((CHAT, chat), (RESPONSES, responses)):
        request = endpoint.decode_request(body).read(ContextSettings())
        assert (request.question, request.passages) == ("q", ("p",))
        assert b"truthlens_context" not in (request.forward_body or b"")
    with pytest.raises(BodyError) as info:
        CHAT.decode_request(responses)
    assert info.value.reason == "bad_messages"  # a Responses body on the chat path is not a chat request
