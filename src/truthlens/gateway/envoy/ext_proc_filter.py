"""``truthlens check-config --envoy``'s refusal of an ext_proc filter without
``allow_mode_override: true``.

The processor picks each exchange's phases in its replies to the headers (``mode_override``): a
checked answer's body BUFFERED or STREAMED, a detection-off answer's body not at all (it streams
past, framed by Envoy as without the processor), no trailers. Envoy ignores those replies unless
the filter allows them, and every exchange then gets the filter's static ``processing_mode``: the
shipped one (``response_body_mode: NONE``) never sends a checked answer to the processor, so
every answer leaves marked unchecked; a static BUFFERED or STREAMED one sends every detection-off
answer through it as well. No setup wants either, so it is an error.

Likewise a filter whose ``metadata_options.receiving_namespaces.untyped`` does not list the
processor's namespace: Envoy then drops the metadata by which the processor moves an exchange it
will not check off the marked routes (:mod:`truthlens.gateway.core.unchecked_route`), and every
such answer leaves marked ``unavailable``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from truthlens.gateway.core.unchecked_route import NAMESPACE

EXT_PROC_TYPE = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"


def filter_errors(envoy_yaml: str) -> list[str]:
    """One error per ext_proc filter of ``envoy_yaml``'s listeners that does not allow the
    processor's mode overrides (unreadable Envoy files are
    :func:`truthlens.gateway.envoy.coverage.envoy_warnings`' to report)."""
    try:
        resources = yaml.safe_load(envoy_yaml)["static_resources"]
        found = list(_ext_proc_filters(resources))
    except (yaml.YAMLError, KeyError, IndexError, TypeError, AttributeError):
        return []
    errors = [f"the ext_proc filter of listener {where} has no allow_mode_override: true: Envoy then ignores the "
              "processor's choice of phases per exchange (a checked answer's body mode, a detection-off answer "
              "streaming past), and every exchange gets the filter's static processing_mode. Add "
              "allow_mode_override: true (as the shipped envoy.yaml has)"
              for where, config in found if config.get("allow_mode_override") is not True]
    errors += [f"the ext_proc filter of listener {where} does not list {NAMESPACE!r} in "
               "metadata_options.receiving_namespaces.untyped: Envoy then drops the processor's metadata that moves "
               "an exchange it will not check (no decision, detection off) to the processor:unchecked route, and "
               f"every such answer leaves marked unchecked. Add metadata_options: {{receiving_namespaces: {{untyped: "
               f"[{NAMESPACE}]}}}} (as the shipped envoy.yaml has)"
               for where, config in found if NAMESPACE not in _receiving(config)]
    return errors


def _receiving(config: dict[str, Any]) -> list[Any]:
    """The untyped metadata namespaces the filter takes from the processor's replies."""
    try:
        names = config["metadata_options"]["receiving_namespaces"]["untyped"]
    except (KeyError, TypeError):
        return []
    return list(names) if isinstance(names, list) else []


def _ext_proc_filters(resources: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(listener name, the filter's typed_config)`` of every ext_proc HTTP filter."""
    for listener in resources.get("listeners") or []:
        for chain in listener.get("filter_chains") or []:
            for network_filter in chain.get("filters") or []:
                for http_filter in (network_filter.get("typed_config") or {}).get("http_filters") or []:
                    config = http_filter.get("typed_config") or {}
                    if config.get("@type") == EXT_PROC_TYPE:
                        yield listener.get("name", "?"), config
