"""Regenerate ``urlfrontier_pb2.py``, ``urlfrontier_pb2.pyi`` and ``urlfrontier_pb2_grpc.py``.

Run from anywhere: ``python -m freshcrawl.service.proto`` (needs ``grpcio-tools``).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    """Run protoc on ``urlfrontier.proto`` with the ``src`` directory as import root."""
    from grpc_tools import protoc

    here = Path(__file__).resolve().parent
    root = here.parents[2]  # .../src
    proto = here.relative_to(root) / "urlfrontier.proto"
    include = Path(protoc.__file__).resolve().parent / "_proto"
    args = ["grpc_tools.protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", f"--pyi_out={root}",
            f"--grpc_python_out={root}", str(proto)]
    return protoc.main(args)


if __name__ == "__main__":
    sys.exit(main())
