"""The model fetcher's progress wrapper: runs a download command and serves its bytes on disk.

This file is a **program shipped as text**, not a module the controller imports: the fetcher init
container runs ``python3 -c <this source> hf download REPO P1 P2 ... --local-dir D --revision R``
(``controller.render.pod``), in the recipe's vLLM image, which has ``python3`` and the ``hf`` CLI.
Only the standard library is used, so it runs on any Python 3.9+ the image carries; the download
itself stays huggingface_hub's own CLI with the same arguments as before.

While the command runs, ``GET /metrics`` on ``MODEL_FETCHER_METRICS_PORT`` (all addresses, or
``MODEL_FETCHER_METRICS_HOST``) answers in the Prometheus text format::

    model_fetcher_bytes_done <bytes on disk>
    model_fetcher_bytes_total <MODEL_FETCHER_BYTES_TOTAL, 0 when unknown>

**Bytes done** are measured on each scrape: the files under ``--local-dir`` that one of the
download's file patterns selects (the positional arguments after the repository, and any
``--include`` values; ``fnmatch.fnmatchcase``, as huggingface_hub filters), plus the partial
downloads, ``*.incomplete`` under ``<local-dir>/.cache/huggingface/download`` (huggingface_hub writes
each file there and renames it into place when complete). Its own metadata and lock files there are
not counted. A partial file a restarted fetcher resumes counts from where it stands.

The wrapper exits with the command's exit code (128 + N when signal N ended it); SIGTERM and
SIGINT are passed on to the command. The first stdout line is ``model-fetcher metrics on
HOST:PORT`` (port 0 picks a free port). Progress is never worth a failed download: when the port
cannot be bound, the line says so and the command runs without the metric.
"""

import fnmatch
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PARTIAL_DIR = os.path.join(".cache", "huggingface", "download")


def option(argv: list[str], name: str) -> list[str]:
    """Every value of ``name VALUE`` (or ``name=VALUE``) in ``argv``."""
    out = []
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif arg.startswith(name + "="):
            out.append(arg[len(name) + 1 :])
    return out


FLAGS = frozenset({"--force-download", "--quiet", "--dry-run", "--help", "-h"})
"""Options of ``hf download`` that take no value (every other option takes one)."""


def patterns(argv: list[str]) -> list[str]:
    """The file patterns of ``hf download``: the positional arguments after the repository id, then
    the values of ``--include`` (an empty list: the whole repository)."""
    rest = argv[argv.index("download") + 1 :] if "download" in argv else []
    positional: list[str] = []
    skip = False
    for arg in rest:
        if skip:
            skip = False
        elif arg.startswith("--") or arg in FLAGS:
            skip = "=" not in arg and arg not in FLAGS
        else:
            positional.append(arg)
    return positional[1:] + option(argv, "--include")


def bytes_done(local_dir: str, include: list[str]) -> int:
    """The selected files under ``local_dir`` plus the partial downloads (see the module doc)."""
    total = 0
    for root, dirs, files in os.walk(local_dir):
        if root == local_dir and ".cache" in dirs:
            dirs.remove(".cache")
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, local_dir).replace(os.sep, "/")
            if not include or any(fnmatch.fnmatchcase(rel, p) for p in include):
                total += _size(path)
    for root, _dirs, files in os.walk(os.path.join(local_dir, PARTIAL_DIR)):
        for name in files:
            if name.endswith(".incomplete"):
                total += _size(os.path.join(root, name))
    return total


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # renamed or removed between the listing and the stat
        return 0


def metrics_text(done: int, total: int) -> str:
    return (
        "# HELP model_fetcher_bytes_done Bytes of the selected model files on disk, partial ones included.\n"
        "# TYPE model_fetcher_bytes_done gauge\n"
        f"model_fetcher_bytes_done {done}\n"
        "# HELP model_fetcher_bytes_total Bytes of the selected model files (0: unknown).\n"
        "# TYPE model_fetcher_bytes_total gauge\n"
        f"model_fetcher_bytes_total {total}\n"
    )


def serve(local_dir: str, include: list[str], total: int, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = metrics_text(bytes_done(local_dir, include), total).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python3 -c <fetcher program> COMMAND [ARGS...]", file=sys.stderr)
        return 2
    local_dir = (option(argv, "--local-dir") or ["."])[-1]
    include = patterns(argv)
    total = int(os.environ.get("MODEL_FETCHER_BYTES_TOTAL") or 0)
    host = os.environ.get("MODEL_FETCHER_METRICS_HOST", "")
    port = int(os.environ.get("MODEL_FETCHER_METRICS_PORT") or 9090)
    server = None
    try:
        server = serve(local_dir, include, total, host, port)
        bound_host, bound_port = server.server_address[:2]
        print(f"model-fetcher metrics on {bound_host!s}:{bound_port}", flush=True)
    except OSError as e:
        print(f"model-fetcher metrics off: cannot listen on {host}:{port}: {e}", flush=True)
    child = subprocess.Popen(argv)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = child.wait()
    if server is not None:
        server.shutdown()
        server.server_close()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
