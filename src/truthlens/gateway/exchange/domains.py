"""The domain of one exchange's request: the user's text classified with the shipped embedder
(:mod:`truthlens.gateway.policy.domains`), counted (``truthlens_domains_total``), and contained:
a classifier that cannot run (the embedder failed to load) reads as no domain, logged once per
failure, so a request is routed as if no domain rule held rather than not served."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from truthlens.gateway.policy.domains import DomainMatch

if TYPE_CHECKING:
    from truthlens.gateway.exchange.phases.state import Runtime
    from truthlens.gateway.policy.config import Config
    from truthlens.modes.base import Services

log = logging.getLogger(__name__)
NO_DOMAIN = DomainMatch(None, 0.0)


async def classify(config: Config, text: str, services: Services, rt: Runtime) -> DomainMatch:
    """The domain of ``text`` under ``config``'s domains (none when the config has no domain rule)."""
    if config.domains is None:
        return NO_DOMAIN
    if services.embedder is None:
        log.warning("domain rules are configured but no embedder is loaded: the request has no domain")
        rt.telemetry.record_domain(None)
        return NO_DOMAIN
    with rt.telemetry.span("truthlens.domain") as span:
        try:
            found = await config.domains.classify(text, services.embedder)
        except Exception as exc:  # the embedder is an ONNX session: any failure means "no domain"
            log.warning("domain classification failed (%s: %s): the request has no domain", type(exc).__name__, exc)
            found = NO_DOMAIN
        span.set_attribute("truthlens.domain", found.header())
    rt.telemetry.record_domain(found.name)
    return found
