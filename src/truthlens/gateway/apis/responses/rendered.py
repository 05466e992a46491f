"""What a client renders of a Responses API stream, and whether the stream's own summaries agree.

A client shows each ``output_text`` part as its ``response.content_part.added`` text plus the
``response.output_text.delta`` events that follow (the ``openai`` SDK builds its snapshot the
same way); the done events and every terminal event (``response.completed``) restate the text.
The gateway checks the rendered text, never the restatement: a restatement that differs from
what the deltas built (or a delta that arrives after its part or the response was declared
done) is a mismatch, and a mismatched stream is never reported clean (``stream_mismatch``).

Indexes the upstream controls are bounded before they key anything: ``output_index`` below
:data:`MAX_OUTPUT_ITEMS`, ``content_index`` below :data:`MAX_CONTENT_PARTS`. Text is kept as a
list of pieces, joined once when read, so reading a stream is linear in its bytes.
"""

from __future__ import annotations

from typing import Any

from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.responses.body import message_texts

MAX_OUTPUT_ITEMS = 128  # output items (messages, tool calls, reasoning) of one response
MAX_CONTENT_PARTS = 128  # content parts of one message

Part = tuple[int, int]  # (output_index, content_index) of an output_text part

MISMATCH = "stream_mismatch"


class RenderedText:
    """The rendered text of every ``output_text`` part of one stream, checked against each
    restatement as it arrives."""

    def __init__(self) -> None:
        self.messages: dict[int, str] = {}  # output_index of each message item → its id
        self._pieces: dict[Part, list[str]] = {}
        self._closed: set[Part] = set()  # parts a done event declared finished
        self.ended = False  # a terminal event declared the whole response finished
        # Progressive release reads each event's new text: when set, every delta is also noted here.
        self.added: list[tuple[Part, str]] | None = None

    # -- what the deltas build --------------------------------------------------------------------

    def message(self, output_index: int, item_id: Any) -> None:
        _bounded(output_index, MAX_OUTPUT_ITEMS, "output_index")
        if isinstance(item_id, str) or output_index not in self.messages:
            self.messages[output_index] = item_id if isinstance(item_id, str) else ""

    def open_part(self, part: Part, text: str) -> None:
        """``response.content_part.added``: the part starts with ``text`` (usually empty)."""
        self._check_open(part, "response.content_part.added")
        if self.added is not None and part not in self._pieces:
            self.added.append((part, text))
        self._pieces.setdefault(part, [text])

    def delta(self, part: Part, text: str) -> None:
        self._check_open(part, "response.output_text.delta")
        if self.added is not None:
            self.added.append((part, text))
        self._pieces.setdefault(part, []).append(text)

    def _check_open(self, part: Part, kind: str) -> None:
        self.message(part[0], None)
        _bounded(part[1], MAX_CONTENT_PARTS, "content_index")
        if self.ended:
            raise BodyError(MISMATCH, f"{kind} after the response was declared complete")
        if part in self._closed:
            raise BodyError(MISMATCH, f"{kind} for output {part[0]} part {part[1]} after its done event")

    # -- what the summaries say -------------------------------------------------------------------

    def restated(self, part: Part, text: str, kind: str) -> None:
        """A done event says ``part`` is finished with ``text``: it must be what was rendered."""
        self.message(part[0], None)
        _bounded(part[1], MAX_CONTENT_PARTS, "content_index")
        if text != self.text(part):
            raise BodyError(MISMATCH, f"{kind} for output {part[0]} part {part[1]} says a text its deltas "
                            f"did not render ({len(text)} characters, the deltas {len(self.text(part))})")
        self._closed.add(part)

    def restated_item(self, item: Any, output_index: int, kind: str) -> None:
        """A message item as a done or terminal event states it."""
        for message in message_texts([item], f"{kind}.item"):
            for j, text in zip(message.parts, message.texts, strict=True):
                self.restated((output_index, j), text, kind)

    def restated_output(self, output: Any, kind: str) -> None:
        """A terminal event's ``response.output``: every message's text, and the end of the answer."""
        for message in message_texts(output, f"{kind}.response.output"):
            for j, text in zip(message.parts, message.texts, strict=True):
                self.restated((message.position, j), text, kind)
        self.ended = True

    # -- reading ----------------------------------------------------------------------------------

    def text(self, part: Part) -> str:
        pieces = self._pieces.get(part)
        if not pieces:
            return ""
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]  # joined once: later reads and deltas stay linear
        return pieces[0]

    def parts(self, output_index: int) -> list[Part]:
        return sorted(key for key in self._pieces if key[0] == output_index)

    def answers(self) -> tuple[str, ...]:
        """One answer per message item, its parts' rendered texts joined, by output index."""
        return tuple("".join(self.text(key) for key in self.parts(oi)) for oi in sorted(self.messages))

    def snapshot(self) -> dict[Part, str]:
        return {key: self.text(key) for key in self._pieces}


def _bounded(index: int, limit: int, name: str) -> None:
    if index >= limit:
        raise BodyError("bad_response", f"a Responses stream event's {name} is {index}, "
                        f"over the gateway's limit of {limit - 1}")

