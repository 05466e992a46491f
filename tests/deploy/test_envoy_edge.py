"""The edge guarantees of the Envoy configs, read from the files (no Envoy runs here; the
behaviour itself is proven through the real Envoy in ``tests/envoy/test_adversarial_edge.py``):
the shipped ``envoy.yaml``, compose and k8s all normalise paths before routing, send every path
but an explicit list through the processor, and remove every X-TruthLens-* response header the
product writes. Nothing is scripted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens.testing import launch

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "truthlens"
# Request headers a client sends the gateway; the product never writes them into a response.
REQUEST_ONLY = {"x-truthlens-include-spans", "x-truthlens-demo"}
# Routes that carry no answers: the only ones where the processor is off.
UNCHECKED_PATHS = {"/v1/models", "/health"}


def configs() -> dict[str, dict[str, Any]]:
    k8s_map = next(
        d for d in yaml.safe_load_all((REPO / "deploy/k8s/base/envoy-configmap.yaml").read_text(encoding="utf-8"))
        if d and d.get("kind") == "ConfigMap"
    )
    return {
        "shipped": yaml.safe_load(launch.SHIPPED_ENVOY_CONFIG.read_text(encoding="utf-8")),
        "compose": yaml.safe_load((REPO / "deploy/compose/envoy.yaml").read_text(encoding="utf-8")),
        "k8s": yaml.safe_load(k8s_map["data"]["envoy.yaml"]),
    }


def hcm(doc: dict[str, Any]) -> dict[str, Any]:
    typed: dict[str, Any] = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return typed


def virtual_host(doc: dict[str, Any]) -> dict[str, Any]:
    hosts = hcm(doc)["route_config"]["virtual_hosts"]
    assert len(hosts) == 1
    host: dict[str, Any] = hosts[0]
    return host


def processor_off(route: dict[str, Any]) -> bool:
    per_filter = route.get("typed_per_filter_config", {}).get("envoy.filters.http.ext_proc", {})
    return bool(per_filter.get("disabled"))


def emitted_header_names() -> set[str]:
    """Every ``x-truthlens-*`` name written as a literal in the product's code."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        if "testing" in path.parts:
            continue
        names |= set(re.findall(r"[\"'](x-truthlens-[a-z0-9-]+)[\"']", path.read_text(encoding="utf-8")))
    return names - REQUEST_ONLY


WHERE = ["shipped", "compose", "k8s"]


@pytest.mark.parametrize("where", WHERE)
def test_paths_are_normalised_before_routing(where: str) -> None:
    manager = hcm(configs()[where])
    assert manager["normalize_path"] is True
    assert manager["merge_slashes"] is True
    assert manager["path_with_escaped_slashes_action"] == "REJECT_REQUEST"


@pytest.mark.parametrize("where", WHERE)
def test_the_processor_is_off_only_for_routes_without_answers(where: str) -> None:
    routes = virtual_host(configs()[where])["routes"]
    off = [r["match"] for r in routes if processor_off(r)]
    # Exact paths only: a prefix would also cover whatever a lenient upstream reads below it.
    assert all(set(m) == {"path"} for m in off), off
    assert {m["path"] for m in off} == UNCHECKED_PATHS
    catch_all = routes[-1]
    assert catch_all["match"] == {"prefix": "/"} and not processor_off(catch_all)
    assert all(r["route"]["cluster"] == "llm_upstream" for r in routes)


@pytest.mark.parametrize("where", WHERE)
def test_every_product_header_is_removed_from_upstream_responses(where: str) -> None:
    host = virtual_host(configs()[where])
    removed = set(host["response_headers_to_remove"])
    names = emitted_header_names()
    assert {"x-truthlens-detected", "x-truthlens-consensus", "x-truthlens-acr-weight"} <= names  # the scan works
    assert names <= removed, sorted(names - removed)
    # Only on the virtual host: no route may override it with a list of its own.
    assert all("response_headers_to_remove" not in r for r in host["routes"])


@pytest.mark.parametrize("where", WHERE)
def test_envoys_reply_to_an_upstream_reset_names_it(where: str) -> None:
    # Not processor_unreachable (the route's unchecked mark): the processor was up. The behaviour:
    # tests/envoy/test_adversarial_round3_streams.py::test_n69_*.
    (mapper,) = hcm(configs()[where])["local_reply_config"]["mappers"]
    assert set(mapper["filter"]["response_flag_filter"]["flags"]) == {"UR", "UC", "UPE"}
    assert [h["header"] for h in mapper["headers_to_add"]] == [{"key": "x-truthlens-reason", "value": "upstream_reset"}]


def test_compose_and_k8s_route_exactly_as_shipped() -> None:
    docs = configs()
    for where in ("compose", "k8s"):
        for key in ("normalize_path", "merge_slashes", "path_with_escaped_slashes_action", "route_config"):
            assert hcm(docs[where])[key] == hcm(docs["shipped"])[key], (where, key)
