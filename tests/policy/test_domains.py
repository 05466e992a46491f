"""Domain conditions: the config's domains and keyword sets, the proposal's §6.2 decisions as
written, and the classifier on the shipped embedder (real ONNX Runtime, no stand-in).

The held-out requests below were written for this test, apart from the shipped example sets;
the accuracy on a public labelled set is measured by ``bench/domains.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.gateway.policy import decisions
from truthlens.gateway.policy.config import load_config, parse_config
from truthlens.gateway.policy.decisions import RequestFacts
from truthlens.gateway.policy.domains import SHIPPED, DomainMatch, shipped
from truthlens.options import ConfigError

PROPOSAL = Path(__file__).resolve().parents[1] / "fixtures" / "proposal_6_2.yaml"

HELD_OUT: dict[str | None, list[str]] = {
    "healthcare": ["Is it dangerous to mix alcohol with antidepressants?",
                   "What blood sugar reading after a meal is too high for a diabetic?",
                   "How soon after a tetanus shot can swelling appear at the injection site?",
                   "My grandfather has swollen ankles and shortness of breath, could it be heart failure?",
                   "What is the usual treatment for a urinary tract infection in women?"],
    "finance": ["Is it better to lease or buy a car from a tax point of view?",
                "How do index funds keep their costs so low?",
                "What does a rising ten-year treasury yield mean for growth stocks?",
                "How should a small business account for inventory write-downs?",
                "What share of my salary should go into my retirement account?"],
    "legal": ["Can my employer read my private messages on a work laptop?",
              "What is needed for a prenuptial agreement to be valid?",
              "Who is liable when a delivery drone damages a neighbour's roof?",
              "How do I appeal a parking fine I think was issued unlawfully?",
              "Does a landlord have to return the security deposit within a set time?"],
    "support": ["The coupon I got by email says it is expired but it should still be valid.",
                "I changed my phone and now the two-factor code never arrives.",
                "My parcel was left at the wrong address, what do I do?",
                "The subscription renewed even though I turned it off last week.",
                "Your checkout page freezes when I click place order."],
    "creative": ["Write a ghost story set in an abandoned lighthouse for a campfire.",
                 "Compose a short poem about a rainy Monday morning.",
                 "Invent a name and a backstory for a steampunk inventor.",
                 "Write a funny toast for my brother's 40th birthday.",
                 "Give me a plot twist for a detective novel set in Venice."],
    None: ["How do I center a div with CSS flexbox?",
           "What is the largest desert on Earth?",
           "How many bones are in a cat's tail?",
           "Explain how a transistor amplifies a signal.",
           "What is the best way to store fresh basil?"],
}


@pytest.fixture(scope="module")
def embedder() -> Any:
    model = OnnxEmbedder.load()
    yield model
    model.close()


def _doc(**extra: Any) -> dict[str, Any]:
    return {"version": 1, "decisions": [{"name": "health", "rules": {"type": "domain", "name": "healthcare"},
                                         "plugins": [{"type": "hallucination", "configuration": {}}]}], **extra}


def test_the_proposals_decisions_load_as_written() -> None:
    config = load_config(PROPOSAL)
    names = [d.name for d in config.decisions]
    assert names == ["medical_assistant", "financial_advisor", "customer_support", "internal_assistant",
                     "creative_writing"]
    assert config.domains is not None and set(config.domains.names) == {*SHIPPED, "internal"}
    medical = config.decisions[0].route
    assert medical is not None and medical.mode == "premium" and medical.threshold == 0.3
    assert medical.require_disclaimer and medical.options.max_iterations == 5
    assert config.decisions[-1].route is None  # creative: detection disabled
    # The keyword set by name: the medical route holds on one of its words whatever the domain.
    facts = RequestFacts("/v1/chat/completions", "POST", {}, user_text="what dosage is safe", domain=None)
    assert decisions.match(config, facts) is config.decisions[0]
    finance = RequestFacts("/v1/chat/completions", "POST", {}, user_text="anything", domain="finance")
    assert decisions.match(config, finance) is config.decisions[1]


def test_a_domain_rule_waits_for_the_body() -> None:
    config = parse_config(_doc())
    facts = RequestFacts("/v1/chat/completions", "POST", {})
    assert decisions.match_before_body(config, facts) is decisions.NEEDS_BODY
    assert config.domains is not None


def test_no_domain_rule_no_classifier() -> None:
    doc = _doc()
    doc["decisions"][0]["rules"] = {"type": "path", "prefix": "/v1"}
    assert parse_config(doc).domains is None


@pytest.mark.parametrize(
    ("extra", "rules", "key", "fragment"),
    [
        ({}, {"type": "domain", "name": "internal"}, "decisions[0].rules.name", "unknown domain 'internal'"),
        ({"domains": {"sets": {"Internal": {"examples": ["x"]}}}}, None, "domains.sets.Internal", "lower-case"),
        ({"domains": {"sets": {"general": {"examples": ["x"]}}}}, None, "domains.sets.general", "not 'general'"),
        ({"domains": {"sets": {"ops": {"examples": []}}}}, None, "domains.sets.ops.examples", "non-empty"),
        ({"domains": {"sets": {"ops": {"examples": ["a"], "replace": True}}}}, None, "domains.sets.ops.replace",
         "not a shipped domain"),
        ({"domains": {"min_similarity": 2}}, None, "domains.min_similarity", "<= 1.0"),
        ({}, {"type": "keyword", "name": "meds"}, "decisions[0].rules.name", "unknown keyword set 'meds'"),
        ({"keywords": {"meds": []}}, None, "keywords.meds", "non-empty list"),
    ],
)
def test_bad_domains_name_the_key(extra: dict[str, Any], rules: Any, key: str, fragment: str) -> None:
    doc = _doc(**extra)
    if rules is not None:
        doc["decisions"][0]["rules"] = rules
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert err.value.key == key and fragment in str(err.value)


def test_bad_model_refs_name_the_key() -> None:
    doc = _doc()
    doc["decisions"][0]["modelRefs"] = [{"name": "gpt"}]
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert err.value.key == "decisions[0].modelRefs[0]"


def test_an_operator_extends_or_replaces_a_shipped_domain() -> None:
    extend = parse_config(_doc(domains={"sets": {"healthcare": {"examples": ["Vet question: my dog limps"]}}}))
    replace = parse_config(_doc(domains={"sets": {"healthcare": {"examples": ["Only this"], "replace": True}}}))
    assert extend.domains is not None and replace.domains is not None
    assert extend.domains.examples["healthcare"] == (*shipped()["healthcare"], "Vet question: my dog limps")
    assert replace.domains.examples["healthcare"] == ("Only this",)


def test_held_out_requests_are_classified(embedder: Any) -> None:
    config = parse_config(_doc())
    assert config.domains is not None
    domain_set = config.domains

    async def run() -> dict[str | None, list[DomainMatch]]:
        return {label: [await domain_set.classify(t, embedder) for t in texts] for label, texts in HELD_OUT.items()}

    found = asyncio.run(run())
    wrong = {label: [(t, m.header()) for t, m in zip(HELD_OUT[label], matches, strict=True) if m.name != label]
             for label, matches in found.items()}
    # At most one miss per domain (5 requests each); every miss is printed.
    assert all(len(w) <= 1 for w in wrong.values()), wrong
    assert sum(len(w) for w in wrong.values()) <= 3, wrong
    for matches in found.values():
        for m in matches:
            assert 0.0 <= m.confidence <= 1.0
            assert m.header() == ("none" if m.name is None else f"{m.name};{m.confidence:.2f}")


def test_empty_text_has_no_domain(embedder: Any) -> None:
    config = parse_config(_doc())
    assert config.domains is not None
    assert asyncio.run(config.domains.classify("   ", embedder)) == DomainMatch(None, 0.0)
