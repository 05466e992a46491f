"""A stream read only for upstream verdicts (no check, or past a route's limit) whose framing
breaks: every byte goes on unchanged and the processor stops reading it, keeping nothing.

Pure phase code (``response_stream``'s scrub-only step) on a state built here; no gRPC.
"""

from __future__ import annotations

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis.endpoints import CHAT
from truthlens.gateway.apis.sse import SSEDecoder
from truthlens.gateway.exchange.phases.response_stream import _scrub_only
from truthlens.gateway.exchange.phases.state import StreamedResponse


def _sent(reply: pb.ProcessingResponse, chunk: bytes) -> bytes:
    mutation = reply.response_body.response.body_mutation
    return chunk if mutation.WhichOneof("mutation") is None else mutation.body


def test_past_the_limit_an_event_that_never_ends_stops_the_reading_and_is_not_kept() -> None:
    st = StreamedResponse("passthrough", SSEDecoder(max_event_bytes=100), CHAT.stream("passthrough", warns=False),
                          finished=True, scrub_rest=True)
    chunks = [b"data: {}\n\n", b"data: " + b"x" * 150]  # the second event outgrows the decoder
    out = b"".join(_sent(_scrub_only(st, c, end_of_stream=False), c) for c in chunks)
    assert out == b"".join(chunks)
    assert not st.scrub_rest and st.decoder.pending_bytes == 0 and not st.pending
