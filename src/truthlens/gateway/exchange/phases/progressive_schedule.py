"""When a progressive stream's completed sentences are checked (:mod:`.response_progressive`):
one check for every sentence waiting, run only when it is worth its cost.

A sentence check costs about one detector pass over the context plus the text it reads, and the
whole answer is checked again at the end: checking every sentence alone made a long answer cost
one context pass per sentence (1,500 one-word sentences: 1,500 runs). So the completed sentences
wait and go to the detector together. The first check runs at once (the first byte should not
wait); after it, a check runs once every check so far, this one included, would have read at
most :data:`CHECK_BUDGET` times what the end's check of the answer so far reads (the context
and the answer), so their cost follows the answer's length over the context's, not its number
of sentences; or once the first sentence waiting has waited :data:`MAX_WAIT_S` (a bound on how
long released text lags, well inside the time Envoy waits for a chunk's reply: the shipped
``message_timeout`` is 120 s). The route's
``budgets.total_ms`` bounds the time of every check of the exchange together, the end's included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from truthlens.gateway.exchange.phases.progressive_state import Progressive

# The sentence checks read at most this many times what the end's check reads (the first runs anyway).
CHECK_BUDGET = 1.0
# A sentence that has waited this long for its check is checked at the next chunk, whatever the cost.
MAX_WAIT_S = 30.0
# Each detector run costs about this many characters' worth on top of the text it reads
# (tokenising, one model call): counted so that tiny sentences cannot buy a run each.
RUN_OVERHEAD_CHARS = 200


def queue(p: Progressive, ends: list[int], now: float) -> None:
    """Sentences completed at ``now`` wait for their check."""
    if ends and not p.waiting:
        p.waiting_since = now
    p.waiting.extend(ends)


def cost(context_chars: int, window_chars: int, p: Progressive) -> int:
    """What a check of every waiting sentence reads, in characters (its run's overhead included)."""
    return RUN_OVERHEAD_CHARS + context_chars + window_chars + (p.waiting[-1] - p.passed)


def due(p: Progressive, context_chars: int, window_chars: int, now: float) -> bool:
    """Whether the sentences waiting are checked now."""
    if not p.waiting:
        return False
    if p.checks == 0 or now - p.waiting_since >= MAX_WAIT_S:
        return True
    allowance = CHECK_BUDGET * (RUN_OVERHEAD_CHARS + context_chars + p.length)
    return p.check_chars + cost(context_chars, window_chars, p) <= allowance


def spent(p: Progressive, chars: int, seconds: float) -> None:
    """A check ran, reading ``chars`` in ``seconds``."""
    p.check_chars += chars
    p.checks += 1
    p.check_s += seconds
    p.waiting.clear()
