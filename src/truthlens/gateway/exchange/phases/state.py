"""The typed per-stream state the phases read and write, and the long-lived runtime they use."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from truthlens.gateway.apis.endpoints import CHAT
from truthlens.gateway.apis.interface import Endpoint
from truthlens.gateway.exchange.lifecycle import Lifecycle
from truthlens.gateway.policy.adaptive.choice import Bandits

if TYPE_CHECKING:
    from collections.abc import Mapping

    from truthlens.gateway.apis.interface import ParsedRequest, Presentation, StreamCodec
    from truthlens.gateway.apis.sse import SSEDecoder
    from truthlens.gateway.core.telemetry import Telemetry
    from truthlens.gateway.exchange.phases.progressive_state import Progressive
    from truthlens.gateway.exchange.services import ServiceLease, ServiceProvider
    from truthlens.gateway.policy.config import Config, Decision, RouteSettings
    from truthlens.gateway.policy.config_store import ConfigStore
    from truthlens.gateway.policy.domains import DomainMatch
    from truthlens.modes.base import Services


@dataclass(frozen=True, slots=True)
class Runtime:
    """Shared by every stream of one server process."""

    config: ConfigStore
    services: ServiceProvider
    telemetry: Telemetry
    lifecycle: Lifecycle = field(default_factory=Lifecycle)  # drain state and the stream count
    bandits: Bandits = field(default_factory=Bandits)  # adaptive routes' stores (shared with /v1/feedback)


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the request headers told us."""

    path: str
    method: str
    headers: dict[str, str]  # lower-case names
    # Each value of a header that came more than once (decision rules test them one by one).
    repeated: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def traceparent(self) -> str | None:
        return self.headers.get("traceparent")


@dataclass(frozen=True, slots=True)
class CheckedRequest:
    """A request whose answer will be checked: the matched decision and the parsed request."""

    decision: Decision
    route: RouteSettings
    request: ParsedRequest
    include_spans: bool
    services: Services  # those of the exchange's pinned config
    task: str = ""  # how the request was read (question, summary, record): x-truthlens-task


@dataclass(slots=True)
class StreamedResponse:
    """SSE response state across STREAMED chunks.

    ``pending`` holds every received byte not yet forwarded to the client, so a failure at
    any point can release it unchanged (nothing is lost).
    """

    strategy: Literal["passthrough", "hold", "progressive"]
    decoder: SSEDecoder
    codec: StreamCodec  # the endpoint's reading and rendering of the events
    # Envoy holds the whole body (BUFFERED_PARTIAL) and sends it in one message: if the
    # processor goes away, Envoy still has every byte. Replies may then set headers.
    buffered: bool = False
    shown: Presentation | None = None  # what the stream ended with (a buffered reply's headers)
    pending: bytearray = field(default_factory=bytearray)
    received: int = 0  # bytes of the body so far (a checked stream is read up to the route's limit)
    done_seen: bool = False
    tail_open: bool = False  # the last bytes released end inside an event (no blank line yet)
    finished: bool = False
    # Past the route's limit, or past the end of the answer: the rest is not read for the answer,
    # but a verdict the upstream wrote is still dropped (the verdict is the gateway's alone).
    scrub_rest: bool = False
    broken: str | None = None  # reason the events could not be understood
    # ``progressive``: the chunks whose replies wait for their sentences' checks, and what was checked.
    progressive: Progressive | None = None
    refused: bool = False  # a fail-closed refusal went out: nothing more of the upstream's does
    # The answer ended at its end marker (``data: [DONE]``): what follows is not part of it
    # (``response_stream.after_end``); ``closed_after_end``: the route fails closed, so none of it goes on.
    past_end: bool = False
    closed_after_end: bool = False


@dataclass(slots=True)
class StreamState:
    config: Config  # pinned at the first message: a reload never changes a running exchange
    lease: ServiceLease  # the services of ``config``, held until the exchange ends
    started: float = field(default_factory=time.monotonic)
    info: RequestInfo | None = None
    # The API the exchange speaks, picked from the request path by the request headers phase.
    api: Endpoint = CHAT
    request_body: bytearray = field(default_factory=bytearray)
    matched: bool = False  # a decision matched: its answers are scrubbed of upstream verdicts
    checked: CheckedRequest | None = None
    unchecked: Presentation | None = None  # a check the route asked for that will not run
    domain: DomainMatch | None = None  # the user's text's domain, when a domain rule needed it
    streamed: StreamedResponse | None = None
    span: Any = None  # the exchange's OpenTelemetry span, open from request headers to the end
    # The processor is done with this exchange and ends the call instead of replying: Envoy then
    # releases everything it holds (see ``phases.response_buffered.over_buffer``).
    end_call: bool = False
