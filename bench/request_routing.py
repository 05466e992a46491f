"""The request body phase: match the route before decoding vs decode first, side by side.

Ours is the real phase (``truthlens.gateway.exchange.phases.request_body.handle``) on a real stream state.
The reference is the order the phase had before: decode the whole request with the global
context settings, match, and decode again when the route reads its context differently
(composed here from the same public functions). Same config, same bodies, one process.

Cases: a tenant whose decision turns detection off (decided by a header: ours never decodes),
a checked route whose context settings differ from the global ones (ours decodes once, the
reference twice), and a route decided by a keyword in the user's text (both decode once: the
control).

    python -m bench.request_routing [--repeats 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.detector.backends.factory import create_detector
from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.exchange import mutations
from truthlens.gateway.exchange.phases import request_body
from truthlens.gateway.exchange.phases.state import CheckedRequest, RequestInfo, Runtime, StreamState
from truthlens.gateway.exchange.services import ServiceProvider
from truthlens.gateway.policy.config import Config, parse_config
from truthlens.gateway.policy.decisions import RequestFacts, match

CONFIG: dict[str, Any] = {
    "version": 1,
    "decisions": [
        {"name": "internal", "priority": 200, "rules": {"type": "header", "name": "x-tenant", "value": "internal"},
         "plugins": [{"type": "hallucination", "configuration": {"enabled": False}}]},
        {"name": "rag", "priority": 100, "rules": {"type": "header", "name": "x-route", "value": "rag"},
         "plugins": [{"type": "hallucination", "configuration": {"context": {"system_messages": True}}}]},
        {"name": "medical", "priority": 50, "rules": {"operator": "AND", "conditions": [
            {"type": "path", "prefix": "/v1/chat"}, {"type": "keyword", "any": ["dosage"]}]},
         "plugins": [{"type": "hallucination"}]},
    ],
}
CASES = {
    "detection off (header)": {"x-tenant": "internal"},
    "checked, own context": {"x-route": "rag"},
    "keyword route (control)": {},
}


def body_of(size: int, *, context_field: bool) -> bytes:
    """A RAG request of about ``size`` bytes: passages in the gateway's context field, or (as
    a client that never heard of the gateway sends them) in a tool message."""
    passage = "The Eiffel Tower was completed in March 1889 and is 330 metres tall. " * 4
    passages = [passage] * max(1, size // len(passage))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer from the context."},
                                      {"role": "user", "content": "What dosage of the tower is safe?"}]
    doc: dict[str, Any] = {"model": "m", "messages": messages}
    if context_field:
        doc["truthlens_context"] = passages
    else:
        messages.append({"role": "tool", "tool_call_id": "r1", "content": "\n\n".join(passages)})
    return json.dumps(doc).encode()


async def reference(state: StreamState, msg: pb.ProcessingRequest, rt: Runtime) -> pb.ProcessingResponse:
    """The previous phase: decode with the global settings, match, decode again if the route
    reads its context differently, then the same checked request and the same reply."""
    info = state.info
    assert info is not None
    body = msg.request_body.body
    config = state.config
    defaults = config.hallucination.context
    request = openai_body.parse_chat_request(body, defaults)
    with rt.telemetry.span("truthlens.decision", path=info.path) as span:
        decision = match(config, RequestFacts(info.path, info.method, info.headers, request.model, request.question))
        span.set_attribute("truthlens.decision", decision.name if decision is not None else "")
    route = decision.route if decision is not None else None
    if decision is not None and route is not None:
        if route.context != defaults:
            request = openai_body.parse_chat_request(body, route.context)
        state.checked = CheckedRequest(decision=decision, route=route, request=request,
                                       include_spans=False, services=state.lease.services)
    if request.forward_body is not None:
        return mutations.body_reply("request_body", body=request.forward_body)
    return mutations.passthrough("request_body")


Phase = Callable[[StreamState, pb.ProcessingRequest, Runtime], Awaitable[pb.ProcessingResponse]]


async def per_call(phase: Phase, provider: ServiceProvider, rt: Runtime, config: Config, info: RequestInfo,
                   body: bytes, repeats: int) -> float:
    """Seconds per request body handled by ``phase``, on a fresh stream state each time."""
    msg = pb.ProcessingRequest()
    msg.request_body.body = body
    msg.request_body.end_of_stream = True
    total = 0.0
    for i in range(repeats + 1):
        state = StreamState(config=config, lease=provider.acquire(config), info=info)
        start = time.perf_counter()
        await phase(state, msg, rt)
        if i:  # the first call warms up
            total += time.perf_counter() - start
        state.lease.release()
    return total / repeats


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    config = parse_config(CONFIG)
    telemetry = Telemetry(registry=CollectorRegistry())
    provider = ServiceProvider(await asyncio.to_thread(create_detector, config.detector), telemetry)

    class _Store:
        current = config

    rt = Runtime(config=_Store(), services=provider, telemetry=telemetry)  # type: ignore[arg-type]
    print(f"{'case':26} {'context in':>10} {'body':>8} {'ours µs':>9} {'previous µs':>12} {'previous / ours':>15}")
    for name, headers in CASES.items():
        for context_field in (False, True):
            for size in (8 << 10, 256 << 10, 2 << 20):
                body = body_of(size, context_field=context_field)
                info = RequestInfo(path="/v1/chat/completions", method="POST", headers=dict(headers))
                repeats = max(5, args.repeats * (8 << 10) // size)
                ours = await per_call(request_body.handle, provider, rt, config, info, body, repeats)
                previous = await per_call(reference, provider, rt, config, info, body, repeats)
                where = "field" if context_field else "tool msg"
                print(f"{name:26} {where:>10} {len(body) >> 10:>6}Ki {ours * 1e6:>9.0f} {previous * 1e6:>12.0f}"
                      f" {previous / ours:>14.2f}×")
    await provider.close()


if __name__ == "__main__":
    asyncio.run(main())
