"""Sampling the controller with py-spy (``pip install py-spy``) while the benchmark runs, and reading
its collapsed stacks: the functions that hold the CPU, by self and by total samples.

``python -m bench.scale.profile FILE [--top 30] [--match controller/]`` prints the tables.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass
class Sampler:
    proc: subprocess.Popen[bytes]
    out: pathlib.Path

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start(pid: int, out: pathlib.Path, *, rate: int = 50) -> Sampler:
    exe = shutil.which("py-spy") or str(pathlib.Path(sys.executable).parent / "py-spy")
    out.parent.mkdir(parents=True, exist_ok=True)
    # --gil: only the thread holding the GIL is sampled, so the tables are CPU, not waiting on sockets
    argv = [
        exe,
        "record",
        "--pid",
        str(pid),
        "--rate",
        str(rate),
        "--gil",
        "--format",
        "raw",
        "--output",
        str(out),
    ]
    log = out.with_suffix(".log").open("wb")
    with log:
        proc = subprocess.Popen([*argv, "--nonblocking"], stdout=log, stderr=subprocess.STDOUT)
    return Sampler(proc, out)


def frames(line: str) -> tuple[list[str], int]:
    """A collapsed-stack line ``a;b;c 12`` -> (frames outermost first, samples)."""
    stack, _, count = line.rstrip().rpartition(" ")
    return stack.split(";"), int(count)


def tables(lines: Iterable[str], *, match: str = "") -> tuple[Counter[str], Counter[str], int]:
    """Self and total samples per frame (a frame counts once per sample for the total)."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in lines:
        if not line.strip():
            continue
        stack, n = frames(line)
        samples += n
        if stack and "idle" not in stack[0]:
            own[stack[-1]] += n
        for f in set(stack):
            if match in f:
                total[f] += n
    return own, total, samples


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scale.profile")
    p.add_argument("file", type=pathlib.Path)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--match", default="", help="only frames containing this text in the totals")
    args = p.parse_args(argv)
    own, total, samples = tables(args.file.read_text().splitlines(), match=args.match)
    print(f"{samples} samples")
    print("self:")
    for f, n in own.most_common(args.top):
        print(f"  {n * 100 / samples:5.1f}%  {f}")
    print("total:")
    for f, n in total.most_common(args.top):
        print(f"  {n * 100 / samples:5.1f}%  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
