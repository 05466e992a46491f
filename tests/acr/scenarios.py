"""Scripted upstream rules for ACR scenarios (the agents' prompts carry ``[acr:<task>]`` tags).

Only the upstream LLM is scripted; everything that consumes these replies is real.
"""

from __future__ import annotations

from typing import Any

QUESTION = "What is the capital of Australia?"
WRONG_PASSAGE = "Sydney is the capital of Australia and the country's largest city."
RIGHT_PASSAGE = "Canberra is the capital of Australia; it became the seat of government in 1927."
PREMISES = ("negation: Sydney is not a city in Australia.\n"
            "entity_swap: Melbourne is the largest city in Australia.\n"
            "time_shift: In 1900 the government sat in Melbourne.")


def rule(tag: str, **reply: Any) -> dict[str, Any]:
    return {"name": tag, "match": {"system_regex": rf"^\[acr:{tag}\]"}, "reply": reply}


def rules(*, internal: dict[str, Any], triples: str, external: dict[str, Any],
          counterfactual: dict[str, Any], fused: str, verify: str = "1: yes") -> list[dict[str, Any]]:
    return [
        {"name": "internal", "match": {"system_regex": r"^\[acr:internal-"}, "reply": internal},
        rule("extract-triples", content=triples),
        rule("verify-triples", content=verify),
        rule("external-answer", **external),
        rule("perturb", content=PREMISES),
        rule("counterfactual-answer", **counterfactual),
        rule("fuse", content=fused),
    ]


def tags_called(calls: list[Any]) -> list[str]:
    out = []
    for call in calls:
        system = next((m["content"] for m in call.messages if m.get("role") == "system"), "")
        out.append(system.split("]")[0].lstrip("[") if system.startswith("[acr:") else "other")
    return out
