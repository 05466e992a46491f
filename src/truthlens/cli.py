"""``truthlens serve | demo | detect | export``."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CONFIG = "configs/config.yaml"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # detect / export own their whole argument list; imported only when used (torch, onnx).
    if args[:1] == ["detect"]:
        from truthlens.detector.cli import main as detect_main

        return int(detect_main(args[1:]) or 0)
    if args[:1] == ["export"]:
        from truthlens.detector.export import main as export_main

        return int(export_main(args[1:]) or 0)
    parser = _parser()
    ns = parser.parse_args(args)
    if ns.command == "serve":
        return _serve(ns)
    if ns.command == "demo":
        from truthlens.demo import run_demo

        return run_demo(config=Path(ns.config))
    parser.print_help()
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truthlens", description="TruthLens Envoy external processor")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the ext_proc gRPC server")
    serve.add_argument("--config", default=DEFAULT_CONFIG)
    serve.add_argument("--listen", default="127.0.0.1:50051")
    serve.add_argument("--metrics-listen", default="127.0.0.1:9190", help='host:port, or "off"')
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--max-message-bytes", type=int, default=64 * 1024 * 1024)
    serve.add_argument("--grace-s", type=float, default=10.0, help="drain time for in-flight streams on SIGTERM")
    serve.add_argument("--tls-cert", help="PEM certificate (with --tls-key: serve gRPC over TLS)")
    serve.add_argument("--tls-key", help="PEM private key")
    serve.add_argument("--config-poll-s", type=float, default=2.0, help="how often the config file is checked")
    serve.add_argument("--log-level", default="INFO")
    demo = sub.add_parser(
        "demo", help="run Envoy + processor + scripted upstream: answers checked, flagged, and one refined"
    )
    demo.add_argument("--config", default=DEFAULT_CONFIG)
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
    logging.basicConfig(level=ns.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    own_metrics_dir = None
    if ns.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Must be set before prometheus_client is imported (by truthlens.gateway.server below) so every
        # worker writes its samples where the supervisor's /metrics reads them.
        own_metrics_dir = tempfile.mkdtemp(prefix="truthlens-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = own_metrics_dir
    from truthlens.gateway.server import ServerSettings, run

    settings = ServerSettings(
        config_path=ns.config,
        listen=ns.listen,
        metrics_listen=None if ns.metrics_listen == "off" else ns.metrics_listen,
        workers=ns.workers,
        max_message_bytes=ns.max_message_bytes,
        grace_s=ns.grace_s,
        tls_cert=ns.tls_cert,
        tls_key=ns.tls_key,
        config_poll_s=ns.config_poll_s,
    )
    try:
        return run(settings)
    finally:
        if own_metrics_dir is not None:
            shutil.rmtree(own_metrics_dir, ignore_errors=True)
