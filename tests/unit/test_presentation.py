"""The one decision of what the client sees (``truthlens.gateway.policy.presentation``): pure, no I/O.

Real parts: the shipped config parsed into route settings; verdicts are built here as a mode
would return them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.detector.types import Detection, Span
from truthlens.gateway.apis.interface import WarningSpec
from truthlens.gateway.policy.config import RouteSettings, parse_config
from truthlens.gateway.policy.presentation import BLOCK_STATUS, present, unchecked
from truthlens.modes.base import ChoiceVerdict, Verdict

SHIPPED = Path(__file__).resolve().parents[2] / "configs" / "config.yaml"


def route(**configuration: Any) -> RouteSettings:
    doc = yaml.safe_load(SHIPPED.read_text())
    doc["decisions"][0]["plugins"][0]["configuration"] = configuration
    settings = parse_config(doc).decisions[0].route
    assert settings is not None
    return settings


def verdict(status: str, *, text: str | None = None, abstain: str | None = None) -> Verdict:
    spans = (Span(start=0, end=3, text="The", prob=0.9),) if status == "detected" else ()
    score = None if status == "unavailable" else (0.9 if status == "detected" else 0.1)
    reason = "detector_timeout" if status == "unavailable" else None
    detection = Detection(status=status, score=score, spans=spans, reason=reason)  # type: ignore[arg-type]
    return Verdict(mode="lightweight", choices=(ChoiceVerdict(0, detection, text),), abstain_message=abstain)


def test_a_detection_with_the_block_action_is_refused_with_422_and_the_verdict_headers() -> None:
    shown = present(route(actions=["header", "block"]), "d", verdict("detected"), n_choices=1,
                    include_spans=False, latency_s=0.01)
    assert shown.outcome == "block" and shown.refusal is not None
    assert shown.refusal.status == BLOCK_STATUS and shown.refusal.code == "hallucination_detected"
    assert shown.refusal.headers["x-truthlens-detected"] == "true"


def test_an_unavailable_verdict_on_a_fail_closed_route_is_refused_with_its_reason() -> None:
    shown = present(route(fail_policy="closed"), "d", verdict("unavailable"), n_choices=1,
                    include_spans=False, latency_s=0.01)
    assert shown.outcome == "refuse" and shown.refusal is not None
    assert shown.refusal.code == "detector_timeout" and shown.refusal.status == 503
    assert shown.headers["x-truthlens-detected"] == "unavailable"


def test_an_unavailable_verdict_on_a_fail_open_route_is_marked_never_clean() -> None:
    shown = present(route(actions=[]), "d", verdict("unavailable"), n_choices=1, include_spans=False, latency_s=0)
    assert shown.refusal is None and shown.outcome == "annotate"
    assert shown.headers["x-truthlens-detected"] == "unavailable"  # even without the header action
    assert shown.headers["x-truthlens-reason"] == "detector_timeout"


def test_the_body_action_warns_a_detection_and_leaves_a_clean_answer_alone() -> None:
    warned = present(route(actions=["body"]), "d", verdict("detected"), n_choices=1, include_spans=False, latency_s=0)
    assert warned.outcome == "rewrite" and warned.warning is not None and warned.headers == {}
    assert warned.final_contents(("Paris.",))[0].endswith("Paris.") and warned.final_contents(("Paris.",))[0] != "Paris."
    clean = present(route(actions=["body"]), "d", verdict("clean"), n_choices=1, include_spans=False, latency_s=0)
    assert clean.outcome == "annotate" and clean.warning is None and clean.final_contents(("Paris.",)) == ("Paris.",)


def test_rewritten_and_abstained_contents_replace_the_answers() -> None:
    refined = present(route(), "d", verdict("clean", text="Fixed."), n_choices=2, include_spans=False, latency_s=0)
    assert refined.contents == ("Fixed.", None)
    assert refined.final_contents(("Old.", "Other.")) == ("Fixed.", "Other.")
    abstained = present(route(), "d", verdict("detected", abstain="No."), n_choices=2, include_spans=False, latency_s=0)
    assert abstained.contents == ("No.", "No.")


@pytest.mark.parametrize("include_spans", [False, True])
def test_details_carry_spans_only_when_the_client_asked(include_spans: bool) -> None:
    shown = present(route(), "d", verdict("detected"), n_choices=1, include_spans=include_spans, latency_s=0)
    assert shown.attach_details is include_spans
    assert ("spans" in shown.details["choices"][0]) is include_spans
    assert shown.details["decision"] == "d" and shown.details["status"] == "detected"


def test_a_check_that_cannot_run_is_marked_or_refused_per_route() -> None:
    open_ = unchecked(route(), "d", "content_encoding", "gzip")
    assert open_.refusal is None and open_.outcome == "unchecked"
    assert open_.headers["x-truthlens-reason"] == "content_encoding" and open_.details["message"] == "gzip"
    closed = unchecked(route(fail_policy="closed"), "d", "malformed_json")
    assert closed.refusal is not None and closed.refusal.status == 400
    assert closed.refusal.error_type == "invalid_request_error"
    # An upstream error is the upstream's own answer, whatever the route says.
    assert unchecked(route(fail_policy="closed"), "d", "upstream_status").refusal is None


# Two spans of one answer as the detector explains them (src/truthlens/detector/explain.py).
WRONG_YEAR = Span(start=34, end=38, text="1925", prob=0.9964, reason="unsupported_date", fact="1925", passage=1,
                  evidence="It was completed in 1889.", context_fact="1889")
MADE_UP = Span(start=0, end=5, text="Speer", prob=0.7, reason="model")


def flagged(*spans: Span) -> Verdict:
    detection = Detection(status="detected", score=0.99, spans=spans)
    return Verdict(mode="lightweight", choices=(ChoiceVerdict(0, detection),))


def test_each_span_says_which_fact_which_passage_and_what_it_states() -> None:
    # No warning here (header action only): the offsets are the detector's, into the answer.
    shown = present(route(actions=["header"]), "d", flagged(WRONG_YEAR, MADE_UP), n_choices=1, include_spans=True,
                    latency_s=0)
    spans = shown.details["choices"][0]["spans"]
    assert spans[0] == {"start": 34, "end": 38, "text": "1925", "prob": 0.9964, "reason": "unsupported_date",
                        "fact": "1925", "passage": 1, "evidence": "It was completed in 1889.", "context_fact": "1889"}
    assert spans[1] == {"start": 0, "end": 5, "text": "Speer", "prob": 0.7, "reason": "model",
                        "fact": None, "passage": None, "evidence": None, "context_fact": None}


def test_a_detected_choice_says_why_after_its_strongest_span() -> None:
    shown = present(route(), "d", flagged(MADE_UP, WRONG_YEAR), n_choices=1, include_spans=True, latency_s=0)
    choice = shown.details["choices"][0]
    assert choice["reason"] == "unsupported_date"
    assert choice["why"] == 'unsupported_date: the answer says "1925", passage 1 says "1889"'
    model_only = present(route(), "d", flagged(MADE_UP), n_choices=1, include_spans=True, latency_s=0)
    assert model_only.details["choices"][0]["reason"] == "model"
    assert model_only.details["choices"][0]["why"] == 'model: "Speer"; no passage of the context mentions this claim'


def test_the_reason_label_goes_in_the_header_the_quoted_why_only_with_spans() -> None:
    shown = present(route(actions=["header"]), "d", flagged(WRONG_YEAR), n_choices=1, include_spans=False,
                    latency_s=0)
    assert shown.headers["x-truthlens-detected"] == "true"
    assert shown.headers["x-truthlens-reason"] == "unsupported_date"  # a label: no answer text in headers
    assert shown.details["choices"][0] == {"index": 0, "status": "detected", "score": 0.99,
                                           "reason": "unsupported_date"}
    clean = present(route(actions=["header"]), "d", verdict("clean"), n_choices=1, include_spans=True, latency_s=0)
    assert "x-truthlens-reason" not in clean.headers
    assert clean.details["choices"][0]["reason"] is None and clean.details["choices"][0]["why"] is None
    timed_out = present(route(), "d", verdict("unavailable"), n_choices=1, include_spans=True, latency_s=0)
    assert timed_out.details["choices"][0]["reason"] == "detector_timeout"
    assert timed_out.details["choices"][0]["why"] is None


def test_a_detected_choice_without_a_span_is_flagged_as_a_whole() -> None:
    # The learned verdict can flag an answer on its support alone, with no span over the threshold.
    shown = present(route(actions=["header"]), "d", flagged(), n_choices=1, include_spans=True, latency_s=0)
    assert shown.headers["x-truthlens-reason"] == "unsupported_answer"
    choice = shown.details["choices"][0]
    assert choice["reason"] == "unsupported_answer"
    assert choice["why"].startswith("unsupported_answer: no single span stands out")


ANSWER = "🎉🎉🎉 The Eiffel 🗼 Tower was completed in 1925."
EMOJI_YEAR = Span(start=ANSWER.index("1925"), end=ANSWER.index("1925") + 4, text="1925", prob=0.99,
                  reason="unsupported_date", fact="1925")


def _spans_as_shown(shown: Any, answer: str, details: Any) -> list[str]:
    content = shown.final_contents((answer,))[0]
    return [content[s["start"]:s["end"]] for s in details["choices"][0]["spans"]]


@pytest.mark.parametrize("position", ["prepend", "append"])
def test_span_offsets_index_the_content_the_client_receives_past_a_prepended_warning(position: str) -> None:
    # Adversarial round 3, N47: the offsets pointed into the upstream's answer, so with the default
    # prepended warning `content[start:end]` read the warning's text, on every warned answer.
    # N48: they count code points (an emoji is one), as Python indexes; docs/clients.md converts them.
    shown = present(route(warning_position=position), "d", flagged(EMOJI_YEAR), n_choices=1, include_spans=True,
                    latency_s=0)
    assert shown.warning is not None and shown.details["warning_position"] == position
    assert _spans_as_shown(shown, ANSWER, shown.details) == ["1925"]
    lead = len(shown.warning.text.strip()) + 2 if position == "prepend" else 0
    assert shown.details["choices"][0]["spans"][0]["start"] == ANSWER.index("1925") + lead
    # A passthrough stream appends the warning after the streamed content: its verdict chunk's
    # offsets index the answer as it streamed, followed by the warning.
    late = shown.late_details()
    streamed = ANSWER + (shown.late_warning() or "")
    assert [streamed[s["start"]:s["end"]] for s in late["choices"][0]["spans"]] == ["1925"]
    assert late["warning_position"] == "append"


def test_only_warned_choices_move_and_a_rewrite_is_indexed_as_rewritten() -> None:
    rewritten = "Completed in 1925, the 🗼 was designed by Speer."
    year = Span(start=rewritten.index("1925"), end=rewritten.index("1925") + 4, text="1925", prob=0.99)
    clean = Detection(status="clean", score=0.1, spans=(Span(start=0, end=3, text="🎉🎉🎉", prob=0.2),))
    verdict_ = Verdict(mode="standard", choices=(
        ChoiceVerdict(0, Detection(status="detected", score=0.99, spans=(year,)), rewritten),
        ChoiceVerdict(1, clean),
    ))
    shown = present(route(), "d", verdict_, n_choices=2, include_spans=True, latency_s=0)
    finals = shown.final_contents(("upstream's own answer", ANSWER))
    for i, final in enumerate(finals):
        assert [final[s["start"]:s["end"]] for s in shown.details["choices"][i]["spans"]] == [["1925"], ["🎉🎉🎉"]][i]


def test_an_answer_the_mode_withheld_lists_no_spans() -> None:
    withheld = Verdict(mode="premium", choices=(ChoiceVerdict(0, Detection(status="detected", score=0.99,
                                                                           spans=(EMOJI_YEAR,))),),
                       abstain_message="No consensus: withheld.")
    shown = present(route(), "d", withheld, n_choices=1, include_spans=True, latency_s=0)
    assert shown.final_contents((ANSWER,))[0].endswith("No consensus: withheld.")
    assert shown.details["choices"][0]["spans"] == []


def test_the_warning_lead_is_what_apply_puts_before_the_answer() -> None:
    for position in ("prepend", "append"):
        warning = WarningSpec("  ⚠️ Check this.\n", position)
        assert warning.apply(ANSWER).index(ANSWER) == warning.lead


def test_a_route_that_requires_the_disclaimer_warns_a_clean_answer_too() -> None:
    clean = present(route(actions=["body"], require_disclaimer=True), "d", verdict("clean"), n_choices=1,
                    include_spans=False, latency_s=0)
    assert clean.warning is not None and clean.warns(0) and clean.final_contents(("Paris.",))[0] != "Paris."
    # A check that did not run is marked unavailable, never dressed as a checked answer.
    failed = present(route(actions=["body"], require_disclaimer=True), "d", verdict("unavailable"), n_choices=1,
                     include_spans=False, latency_s=0)
    assert failed.warning is None


@pytest.mark.parametrize("status", ["detected", "clean"])
def test_the_task_the_request_was_read_as_is_in_the_headers_and_the_details(status: str) -> None:
    shown = present(route(actions=["header", "body"]), "d", verdict(status), n_choices=1, include_spans=False,
                    latency_s=0.01, context_source="field", task="summary")
    assert shown.headers["x-truthlens-task"] == "summary" and shown.details["task"] == "summary"


def test_a_request_no_context_can_ground_is_skipped_with_its_reason_and_task_never_refused() -> None:
    from truthlens.gateway.exchange import ungrounded

    shown = ungrounded.presentation(route(actions=["header", "block"], no_context="block"), "d",
                                    ungrounded.UNGROUNDABLE_REASON, task="ungroundable")
    assert shown.refusal is None and shown.outcome == "skipped"
    assert shown.headers["x-truthlens-detected"] == "skipped"
    assert shown.headers["x-truthlens-reason"] == "ungroundable" and shown.headers["x-truthlens-task"] == "ungroundable"
