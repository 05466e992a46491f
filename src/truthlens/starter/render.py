"""What ``truthlens init`` writes, rendered from the packaged files: the chosen config (the starter
or an example) with its upstream address, and the packaged ``envoy.yaml`` with that config's routes
(``truthlens envoy-routes``: detection-off decisions bypass the processor, checked ones carry the
unchecked mark) and the same upstream in its ``llm_upstream`` cluster, so the address is given once.

The packaged files are edited as text, at fixed anchors, so their comments survive; a template
that lost an anchor fails here (:class:`InitError`), not in Envoy."""

from __future__ import annotations

import ipaddress
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

# Where every packaged config and envoy.yaml expect the model server.
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
# envoy.yaml: the routes block (from its comment to the filters) and the upstream cluster.
_ROUTES_START = "                      # What `truthlens envoy-routes configs/config.yaml` prints"
_ROUTES_END = "                http_filters:\n"
_ROUTES_INDENT = " " * 22
_CLUSTER_START = "    - name: llm_upstream\n"
_CLUSTER_END = "    - name: truthlens_extproc\n"
# docker-compose.yaml: the scripted upstream service, dropped when a real one is named.
_COMPOSE_UPSTREAM = "  upstream:\n"
_COMPOSE_UPSTREAM_END = "  envoy:\n"
_COMPOSE_DEPENDENCY = "      upstream:\n        condition: service_started\n"
# Debian/Ubuntu's CA bundle (the envoyproxy/envoy image's too); other systems: edit the path.
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


class InitError(RuntimeError):
    """``truthlens init`` would overwrite a file (without ``force``) or cannot write what was asked."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """The OpenAI-compatible model server, as ``--upstream URL`` names it."""

    host: str
    port: int
    tls: bool

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/v1"

    @property
    def is_ip(self) -> bool:
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True


def parse_upstream(url: str) -> Upstream:
    """``http(s)://HOST[:PORT][/v1]``; the API must be served at ``/v1`` (Envoy forwards the
    client's path unchanged, so a server under another prefix would see paths it does not serve)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise InitError(f"--upstream {url!r}: the scheme must be http or https")
    if not parts.hostname:
        raise InitError(f"--upstream {url!r}: no host")
    if parts.path.rstrip("/") not in ("", "/v1") or parts.query or parts.fragment:
        raise InitError(f"--upstream {url!r}: the server must serve the OpenAI API at /v1 (Envoy forwards "
                        "the client's path, /v1/chat/completions, unchanged)")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise InitError(f"--upstream {url!r}: bad port") from None
    return Upstream(parts.hostname, port, parts.scheme == "https")


SCHEMA_LINE = "# yaml-language-server: $schema="


def with_schema_line(config: str, schema: str) -> str:
    """``config`` whose first line points editors at ``schema`` (the shipped files point at the
    repository's docs/ copy, which a written folder does not have)."""
    first, sep, rest = config.partition("\n")
    body = rest if first.startswith(SCHEMA_LINE) else config
    return f"{SCHEMA_LINE}{schema}\n{body}"


def config_text(source: str, upstream: Upstream | None) -> str:
    """The config with every endpoint of the default upstream moved to ``upstream`` (other
    endpoints, e.g. a detector server on another port, stay)."""
    return source if upstream is None else source.replace(DEFAULT_BASE_URL, upstream.base_url)


def envoy_text(template: str, config: str, upstream: Upstream | None) -> str:
    """The packaged envoy.yaml with ``config``'s routes and ``upstream`` in its cluster."""
    from truthlens.gateway.envoy import routes as envoy_routes
    from truthlens.gateway.policy.preflight import validate
    from truthlens.options import ConfigError

    with tempfile.TemporaryDirectory(prefix="truthlens-init-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(config, encoding="utf-8")
        try:
            checked = validate(str(path))
        except ConfigError as exc:
            raise InitError(f"the config to write is invalid: {exc}") from None
    try:
        plan = envoy_routes.plan(checked)
    except envoy_routes.RoutesError as exc:
        raise InitError(f"envoy.yaml's routes: {exc}") from None
    if upstream is not None and not upstream.is_ip:
        for route in plan.routes:  # the Host a name-based server (or its TLS front) expects
            route["route"]["auto_host_rewrite"] = True
    routes = envoy_routes.render(plan, source="config.yaml", digest=checked.digest)
    text = _splice(template, _ROUTES_START, _ROUTES_END,
                   "".join(f"{_ROUTES_INDENT}{line}\n" if line else "\n" for line in routes.splitlines()))
    if upstream is not None:
        text = _splice(text, _CLUSTER_START, _CLUSTER_END, _cluster(upstream))
    return text


def compose_text(template: str, upstream: Upstream | None) -> str:
    """The compose file; with a real upstream named, without the scripted one."""
    if upstream is None:
        return template
    text = _splice(template, _COMPOSE_UPSTREAM, _COMPOSE_UPSTREAM_END, "")
    if _COMPOSE_DEPENDENCY not in text:
        raise InitError("the packaged docker-compose.yaml has no upstream dependency to remove")
    return text.replace(_COMPOSE_DEPENDENCY, "")


def _splice(text: str, start: str, end: str, replacement: str) -> str:
    i = text.find(start)
    j = text.find(end, i + 1) if i >= 0 else -1
    if i < 0 or j < 0:
        raise InitError(f"the packaged template lost its anchor {start.strip()!r}")
    return text[:i] + replacement + text[j:]


def _cluster(upstream: Upstream) -> str:
    lines = [
        "    # The model server (`truthlens init --upstream`): the same address as config.yaml's models.",
        "    - name: llm_upstream",
        f"      type: {'STATIC' if upstream.is_ip else 'STRICT_DNS'}",
        # A name with both an IPv4 and an IPv6 address (localhost): IPv4 first, as most servers listen.
        *([] if upstream.is_ip else ["      dns_lookup_family: V4_PREFERRED"]),
        "      connect_timeout: 5s",
        "      per_connection_buffer_limit_bytes: 8388608",
        "      load_assignment:",
        "        cluster_name: llm_upstream",
        "        endpoints:",
        "          - lb_endpoints:",
        "              - endpoint:",
        "                  address:",
        f"                    socket_address: {{ address: {upstream.host}, port_value: {upstream.port} }}",
    ]
    if upstream.tls:
        san = "IP_ADDRESS" if upstream.is_ip else "DNS"
        lines += [
            "      # TLS to the upstream, its certificate checked against the system's CAs and its name.",
            "      transport_socket:",
            "        name: envoy.transport_sockets.tls",
            "        typed_config:",
            '          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
            *([f"          sni: {upstream.host}"] if not upstream.is_ip else []),
            "          common_tls_context:",
            "            validation_context:",
            f"              trusted_ca: {{ filename: {SYSTEM_CA_BUNDLE} }}",
            "              match_typed_subject_alt_names:",
            f"                - san_type: {san}",
            f"                  matcher: {{ exact: \"{upstream.host}\" }}",
        ]
    return "\n".join(lines) + "\n\n"
