"""``truthlens check-config --envoy``'s one refusal: a route whose ``max_body_bytes`` is over the
buffer Envoy gives a connection (``per_connection_buffer_limit_bytes`` of the listener, and of
the clusters its routes send to; Envoy's default when unset: 1 MiB).

A checked answer is buffered whole before the processor reads it. Envoy refuses a body over the
buffer itself: a 500 for an answer (labelled ``processor_unreachable`` by the shipped routes'
mark, the processor up and idle), a 413 for a request. So an answer between the buffer and
``max_body_bytes`` is neither checked nor passed on as ``too_large``: it is lost. No setup wants
that, so it is an error, not a warning: lower ``max_body_bytes`` or raise the buffer.
"""

from __future__ import annotations

from typing import Any

import yaml

from truthlens.gateway.policy.config import Config

# Envoy's per_connection_buffer_limit_bytes when a listener or cluster does not set it.
ENVOY_DEFAULT_BUFFER = 1024 * 1024


def buffer_errors(config: Config, envoy_yaml: str) -> list[str]:
    """Each ``max_body_bytes`` of ``config`` that is over a buffer of ``envoy_yaml`` (unreadable
    Envoy files are :func:`truthlens.gateway.envoy.coverage.envoy_warnings`' to report)."""
    try:
        resources = yaml.safe_load(envoy_yaml)["static_resources"]
        buffers = _buffers(resources)
    except (yaml.YAMLError, KeyError, IndexError, TypeError, ValueError):
        return []
    if not buffers:
        return []
    where, smallest = min(buffers, key=lambda b: b[1])
    by_value: dict[int, list[str]] = {config.hallucination.max_body_bytes: ["hallucination"]}
    for d in config.decisions:
        if d.route is not None:
            by_value.setdefault(d.route.max_body_bytes, []).append(f'decision "{d.name}"')
    return [f"max_body_bytes {value} (of {', '.join(owners)}) is over Envoy's buffer: {where} has "
            f"per_connection_buffer_limit_bytes {smallest}. Envoy answers a buffered answer over its buffer "
            f"with a 500 (a request with a 413) before the processor sees it; set max_body_bytes to at most "
            f"{smallest}, or raise the buffer" for value, owners in sorted(by_value.items()) if value > smallest]


def _buffers(resources: dict[str, Any]) -> list[tuple[str, int]]:
    """``(what, bytes)`` of every listener and of every cluster a route sends to."""
    out: list[tuple[str, int]] = []
    routed: set[str] = set()
    for listener in resources.get("listeners") or []:
        out.append((f"listener {listener.get('name', '?')}", _limit(listener)))
        for chain in listener.get("filter_chains") or []:
            for network_filter in chain.get("filters") or []:
                route_config = (network_filter.get("typed_config") or {}).get("route_config") or {}
                for host in route_config.get("virtual_hosts") or []:
                    routed |= {r["route"]["cluster"] for r in host.get("routes") or []
                               if isinstance(r.get("route"), dict) and "cluster" in r["route"]}
    out += [(f"cluster {c['name']}", _limit(c)) for c in resources.get("clusters") or [] if c.get("name") in routed]
    return out


def _limit(resource: dict[str, Any]) -> int:
    value = resource.get("per_connection_buffer_limit_bytes")
    if isinstance(value, dict):  # the protobuf wrapper's JSON form: {"value": N}
        value = value.get("value")
    return ENVOY_DEFAULT_BUFFER if value is None else int(value)
