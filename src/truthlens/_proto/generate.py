"""Regenerate the ``*_pb2.py`` modules and their ``.pyi`` from the ``.proto`` files beside them.

Needs ``grpcio-tools`` (the ``dev`` extra). Run from the repository root:
``python -m truthlens._proto.generate``.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROTO_FILES = ("truthlens_ext_proc.proto", "oip_v2.proto")


def main() -> int:
    from grpc_tools import protoc  # dev-only dependency

    # grpc_tools ships the well-known types (google/protobuf/*.proto).
    well_known = str(resources.files("grpc_tools") / "_proto")
    for name in PROTO_FILES:
        rc: int = protoc.main(
            [
                "protoc",
                f"-I{PROTO_DIR}",
                f"-I{well_known}",
                f"--python_out={PROTO_DIR}",
                f"--pyi_out={PROTO_DIR}",
                str(PROTO_DIR / name),
            ]
        )
        if rc != 0:
            print(f"protoc failed on {name} (exit {rc})", file=sys.stderr)
            return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
