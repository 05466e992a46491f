"""``truthlens init | check-config | schema | envoy-routes | serve | demo | upstream | detect | export``."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from truthlens.cli_help import HelpWithDefaults

if TYPE_CHECKING:  # the CLI imports the gateway only for the commands that need it
    from truthlens.gateway.policy.config import Config

# ``serve`` without ``--config``: the first of these that exists, else the packaged starter config.
CONFIG_SEARCH = ("config.yaml", "configs/config.yaml")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # detect / export own their whole argument list; imported only when used (torch, onnx).
    if args[:1] == ["detect"]:
        from truthlens.detector.cli import main as detect_main

        return int(detect_main(args[1:]) or 0)
    if args[:1] == ["export"]:
        from truthlens.detector.export.cli import main as export_main

        return int(export_main(args[1:]) or 0)
    if args[:1] == ["upstream"]:
        from truthlens.testing.upstream import main as upstream_main

        upstream_main(args[1:])
        return 0
    parser = _parser()
    ns = parser.parse_args(args)
    if ns.command == "serve":
        return _serve(ns)
    if ns.command == "init":
        return _init(ns)
    if ns.command == "check-config":
        return _check_config(ns)
    if ns.command == "envoy-routes":
        return _envoy_routes(ns)
    if ns.command == "schema":
        from truthlens.gateway.policy import schema

        print(schema.markdown(schema.build()) if ns.markdown else schema.schema_json(), end="")
        return 0
    if ns.command == "demo":
        from truthlens.demo import run_demo
        from truthlens.starter import CONFIG

        return run_demo(Path(ns.config) if ns.config else CONFIG, ns.mode, free_ports=ns.free_ports)
    parser.print_help()
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truthlens", description="TruthLens Envoy external processor")
    parser.add_argument("--version", action="version", version=f"truthlens {_version()}")
    sub = parser.add_subparsers(dest="command")
    init = sub.add_parser(
        "init", help="write a starter config.yaml, envoy.yaml, docker-compose.yaml and the config's JSON Schema")
    init.add_argument("dir", nargs="?", default=".", help="where to write them (default: here)")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.add_argument("--example", metavar="NAME",
                      help="write this example config instead of the starter one (standard, premium, acr, auto, "
                      "cascade, llm-detector, remote)")
    init.add_argument("--upstream", metavar="URL",
                      help="the OpenAI-compatible model server, e.g. https://vllm.internal:8443/v1 (default "
                      "http://127.0.0.1:8000/v1): written into Envoy's llm_upstream cluster and the config's models")
    check = sub.add_parser("check-config", help="validate a config file offline (exit 1 naming the bad key)")
    check.add_argument("file")
    check.add_argument("--envoy", metavar="ENVOY_YAML",
                       help="also compare this envoy.yaml's routes with the ones the config needs (warnings)")
    schema = sub.add_parser("schema", help="print the config file's JSON Schema (for editors), built from the "
                            "validator itself")
    schema.add_argument("--markdown", action="store_true", help="print the configuration reference page instead")
    routes = sub.add_parser(
        "envoy-routes",
        help="print Envoy routes that skip the processor for detection-off decisions (YAML, for envoy.yaml)",
    )
    routes.add_argument("file", nargs="?", help="the processor's config file (validated as check-config)")
    # The first releases took the file as --config; kept so existing scripts still run.
    routes.add_argument("--config", dest="config_option", help=argparse.SUPPRESS)
    routes.add_argument("--cluster", default="llm_upstream", help="the upstream cluster (default: llm_upstream)")
    routes.add_argument("--timeout", default="300s", help="each route's timeout (default: 300s)")
    routes.add_argument(
        "--forward-context-field", action="store_true",
        help="accept that bypassed requests reach the upstream with the context extension field in their body",
    )
    serve = sub.add_parser("serve", help="run the ext_proc gRPC server", formatter_class=HelpWithDefaults)
    serve.add_argument(
        "--config",
        help="default: ./config.yaml, else ./configs/config.yaml, else the packaged starter config",
    )
    serve.add_argument("--listen", default="127.0.0.1:50051", help="the gRPC (ext_proc) address Envoy calls")
    serve.add_argument("--metrics-listen", default="127.0.0.1:9190",
                       help='host:port of /metrics, /healthz, /readyz and POST /v1/check, or "off"')
    serve.add_argument("--workers", type=int, default=1, help="serving processes sharing the gRPC port")
    serve.add_argument("--max-message-bytes", type=int, default=64 * 1024 * 1024,
                       help="the largest gRPC message (Envoy sends a buffered body as one)")
    serve.add_argument("--grace-s", type=float, default=10.0, help="drain time for in-flight streams on SIGTERM")
    serve.add_argument("--tls-cert", help="PEM certificate (with --tls-key: serve gRPC over TLS)")
    serve.add_argument("--tls-key", help="PEM private key")
    serve.add_argument("--config-poll-s", type=float, default=2.0, help="how often the config file is checked")
    serve.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    serve.add_argument("--no-check-endpoint", dest="check_endpoint", action="store_false",
                       help="turn off POST /v1/check (the detector's dry run) on the metrics listener (default: on)")
    serve.add_argument("--check-max-items", type=int, default=64, help="POST /v1/check: items per request (413 over)")
    serve.add_argument("--check-max-chars", type=int, default=2_000_000,
                       help="POST /v1/check: characters of context, questions and answers per request (413 over)")
    serve.add_argument("--check-max-concurrent", type=int, default=2,
                       help="POST /v1/check: requests checked at once (429 beyond); their rows yield to live exchanges")
    serve.add_argument("--log-format", choices=("text", "json"), default=None,
                       help="text (default) or json: one JSON object per line, the per-exchange audit line's "
                       "fields as keys (default: TRUTHLENS_LOG_FORMAT, else text)")
    demo = sub.add_parser(
        "demo", help="run Envoy + processor + scripted upstream: answers checked, flagged, and one refined"
    )
    demo.add_argument("--config", help="default: the packaged starter config")
    demo.add_argument(
        "--mode", choices=("lightweight", "standard", "premium", "acr", "auto"),
        help="show what one mode does: its question on the lightweight route, then on a route in this mode",
    )
    demo.add_argument("--free-ports", action="store_true", help="free loopback ports instead of 10000/8000/50051")
    sub.add_parser("upstream", help="run the scripted OpenAI-compatible upstream (a test double, not a model; "
                   "see truthlens upstream --help)")
    sub.add_parser("detect", help="check one answer with the detector (see truthlens detect --help)")
    sub.add_parser("export", help="export a checkpoint to an ONNX detector (see truthlens export --help)")
    return parser


def _serve(ns: argparse.Namespace) -> int:
    if ns.workers < 1:
        print("truthlens serve: --workers must be >= 1", file=sys.stderr)
        return 2
    if bool(ns.tls_cert) != bool(ns.tls_key):
        print("truthlens serve: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    for flag in ("check_max_items", "check_max_chars", "check_max_concurrent"):
        if getattr(ns, flag) < 1:
            print(f"truthlens serve: --{flag.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    from truthlens import logs

    log_format = ns.log_format or os.environ.get(logs.FORMAT_ENV) or "text"
    os.environ[logs.FORMAT_ENV] = log_format  # worker processes configure theirs from it
    logs.configure(ns.log_level, log_format)
    own_metrics_dir = None
    if ns.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Must be set before prometheus_client is imported (by truthlens.gateway.server.serve below) so every
        # worker writes its samples where the supervisor's /metrics reads them.
        own_metrics_dir = tempfile.mkdtemp(prefix="truthlens-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = own_metrics_dir
    from truthlens.gateway.server.dry_run import Limits
    from truthlens.gateway.server.serve import ServerSettings, run

    config = ns.config or default_config()
    logging.getLogger("truthlens").info("config: %s", config)
    settings = ServerSettings(
        config_path=config,
        listen=ns.listen,
        metrics_listen=None if ns.metrics_listen == "off" else ns.metrics_listen,
        workers=ns.workers,
        max_message_bytes=ns.max_message_bytes,
        grace_s=ns.grace_s,
        tls_cert=ns.tls_cert,
        tls_key=ns.tls_key,
        config_poll_s=ns.config_poll_s,
        check_endpoint=ns.check_endpoint,
        check_limits=Limits(max_items=ns.check_max_items, max_chars=ns.check_max_chars,
                            max_concurrent=ns.check_max_concurrent),
    )
    try:
        return run(settings)
    finally:
        if own_metrics_dir is not None:
            shutil.rmtree(own_metrics_dir, ignore_errors=True)


def default_config() -> str:
    """``serve``'s config when none is named: ``./config.yaml`` (what ``truthlens init`` writes),
    ``./configs/config.yaml`` (a checkout), else the starter config inside the package."""
    for candidate in CONFIG_SEARCH:
        if Path(candidate).is_file():
            return candidate
    from truthlens.starter import CONFIG

    return str(CONFIG)


def _init(ns: argparse.Namespace) -> int:
    from truthlens.starter import INIT_NAMES, InitError, write_starter

    target = Path(ns.dir)
    try:
        written = write_starter(target, force=ns.force, example=ns.example, upstream=ns.upstream)
    except (InitError, OSError) as exc:
        print(f"truthlens init: {exc}", file=sys.stderr)
        return 1
    for name in INIT_NAMES:
        path = target / name
        print(f"{'wrote' if path in written else 'unchanged'} {path}")
    print("\nnext:\n" + "\n".join(f"  {line}" for line in next_steps(target, upstream_given=bool(ns.upstream))))
    return 0


def next_steps(target: Path, *, upstream_given: bool) -> list[str]:
    """What to run after ``init`` wrote into ``target``: a scripted model (test double) on every
    loopback model port the written config names, unless ``--upstream`` named the real one."""
    import yaml

    config = yaml.safe_load((target / "config.yaml").read_text(encoding="utf-8")) or {}
    detector = config.get("detector") or {}
    # The models a generative detector (backend: llm) or the cascade's confirmer calls.
    detector_models = {(detector.get(k) or {}).get("model") for k in ("llm", "confirm")} - {None}
    roles: dict[int, str] = {}
    for name, endpoint in (config.get("models") or {}).items():
        port = _loopback_port(str((endpoint or {}).get("base_url", "")))
        is_detector = name in detector_models
        if port is not None and (is_detector or not upstream_given):
            roles.setdefault(port, "the span detector" if is_detector else "the model server")
    where = "" if target == Path(".") else f"cd {target} && "
    steps = [f"{where}truthlens check-config config.yaml --envoy envoy.yaml"]
    steps += [f"truthlens upstream --demo --port {port} &   # a scripted stand-in for {role} (test double)"
              for port, role in sorted(roles.items())]
    steps += [
        "truthlens serve --config config.yaml &    # the processor: gRPC 127.0.0.1:50051, probes 127.0.0.1:9190",
        # --base-id / --disable-hot-restart: no shared memory with another Envoy on this host (the
        # demo's, a sidecar's), which would refuse to start this one.
        "envoy -c envoy.yaml -l warning --disable-hot-restart   # clients call http://127.0.0.1:10000/v1",
        "(or, with Docker: put the truthlens_extproc wheel here, then docker compose up -d --build)",
    ]
    return steps


def _loopback_port(url: str) -> int | None:
    from urllib.parse import urlparse

    try:
        parsed = urlparse(url)
        port = parsed.port
    except ValueError:
        return None
    if parsed.hostname in ("127.0.0.1", "localhost", "::1"):
        return port or (443 if parsed.scheme == "https" else 80)
    return None


def _validated(path: str) -> Config | None:
    """The config at ``path``, or None after printing why it is invalid (the offending key)."""
    from truthlens.gateway.policy.preflight import validate
    from truthlens.options import ConfigError

    try:
        return validate(path)
    except ConfigError as exc:
        # An unreadable file's error already starts with its path.
        where = "" if exc.key == str(Path(path)) else f"{path}: "
        print(f"{where}{exc}{_envoy_file_hint(path)}", file=sys.stderr)
        return None


def _envoy_file_hint(path: str) -> str:
    """A hint when ``path`` is an Envoy bootstrap handed where the processor's config belongs."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    if isinstance(doc, dict) and "static_resources" in doc:
        return ("\n(this looks like an Envoy bootstrap file: check-config takes the processor's config, "
                "e.g. truthlens check-config config.yaml --envoy envoy.yaml)")
    return ""


def _check_config(ns: argparse.Namespace) -> int:
    config = _validated(ns.file)
    if config is None:
        return 1
    from truthlens.gateway.envoy import buffers, coverage, ext_proc_filter
    from truthlens.gateway.policy.thresholds import describe

    warnings = coverage.api_warnings(config)
    errors: list[str] = []
    if ns.envoy:
        try:
            envoy_yaml = Path(ns.envoy).read_text(encoding="utf-8")
        except OSError as exc:
            print(f"{ns.envoy}: {exc}", file=sys.stderr)
            return 1
        warnings += [f"{ns.envoy}: {w}" for w in coverage.envoy_warnings(config, envoy_yaml)]
        # A body limit over Envoy's buffer loses answers (Envoy's 500): refused, not warned.
        errors = [f"{e} ({ns.envoy})" for e in buffers.buffer_errors(config, envoy_yaml)]
        # Without mode overrides Envoy ignores the phases the processor picks per exchange: refused.
        errors += [f"{e} ({ns.envoy})" for e in ext_proc_filter.filter_errors(envoy_yaml)]
    routes = sum(1 for d in config.decisions if d.route is not None)
    if not errors:
        print(f"{ns.file}: ok (digest {config.digest}, {len(config.decisions)} decisions, {routes} checked)")
        for d in config.decisions:  # a threshold derived from costs: the τ it comes to, per task
            if d.route is not None and d.route.threshold_basis:
                print(f"  {d.name}: threshold {describe(d.route.threshold, d.route.task_thresholds)} "
                      f"({d.route.threshold_basis})")
    for warning in warnings:
        print(f"warning: {ns.file}: {warning}", file=sys.stderr)
    for error in errors:
        print(f"error: {ns.file}: {error}", file=sys.stderr)
    return 1 if errors else 0


def _envoy_routes(ns: argparse.Namespace) -> int:
    from truthlens.gateway.envoy import routes as envoy_routes

    if (ns.file is None) == (ns.config_option is None):
        print("truthlens envoy-routes: name the config file once: truthlens envoy-routes FILE", file=sys.stderr)
        return 2
    path = ns.file or ns.config_option
    if ns.config_option is not None:
        print("truthlens envoy-routes: --config FILE is deprecated; use: truthlens envoy-routes FILE", file=sys.stderr)
    config = _validated(path)
    if config is None:
        return 1
    try:
        result = envoy_routes.plan(config, cluster=ns.cluster, timeout=ns.timeout,
                                   forward_context_field=ns.forward_context_field)
    except envoy_routes.RoutesError as exc:
        print(f"truthlens envoy-routes: {path}: {exc}", file=sys.stderr)
        return 1
    print(envoy_routes.render(result, source=path, digest=config.digest), end="")
    return 0


def _version() -> str:
    """The installed distribution's version; the package's own when running from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    from truthlens import __version__

    try:
        return version("truthlens-extproc")
    except PackageNotFoundError:
        return __version__
