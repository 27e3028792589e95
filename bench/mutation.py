"""``python -m bench.mutation [--sample K] [--seed S] [--children N]``: a mutation run (mutmut) over
``controller/planner`` and ``controller/decide.py`` against the unit tests that test them
(``[tool.mutmut]`` in pyproject.toml), and its score. ``make mutation`` runs it; ``make test`` never.

mutmut writes every mutant into ``mutants/`` first; with ``--sample K`` a random K of them (seeded,
so the same K each time on the same code) are run, else all. It then prints, per module, the
mutants killed (a test failed, or timed out), survived (every test passed) and not covered (no
selected test calls the function), and the survivors' names: ``mutmut show NAME`` prints the diff.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
MUTMUT = pathlib.Path(sys.executable).parent / "mutmut"
STATUS = {1: "killed", 3: "killed", 36: "killed", 24: "killed", -24: "killed", 152: "killed", 0: "survived"}
# mutmut's exit codes: 1/3 a test failed, 36/24/152 a timeout (counted as killed, as mutmut does),
# 0 every test passed, 33/5 no test covers the function; anything else is "other".


def exit_codes() -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        out.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return out


def status(code: int | None) -> str:
    if code in (33, 5):
        return "not covered"
    if code is None:
        return "not run"
    return STATUS.get(code, "other")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=0, help="run a random K mutants (0: all)")
    p.add_argument("--seed", type=int, default=25)
    p.add_argument("--children", type=int, default=2, help="mutmut --max-children")
    p.add_argument("--report", action="store_true", help="only the figures of the last run (so far)")
    args = p.parse_args(argv)
    run = [str(MUTMUT), "run", "--max-children", str(args.children)]
    if not args.report:
        # A name that matches nothing: mutmut writes the mutants and the test map, runs none, fails.
        subprocess.run([*run, "no.such.mutant"], cwd=ROOT, capture_output=True, check=False)
    names = sorted(exit_codes())
    chosen = sorted(random.Random(args.seed).sample(names, args.sample)) if args.sample else names
    print(f"{len(names)} mutants; {'reporting' if args.report else 'running'} {len(chosen)}", flush=True)
    if not args.report:
        subprocess.run([*run, *chosen], cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    codes = exit_codes()
    per: dict[str, Counter[str]] = defaultdict(Counter)
    survivors = []
    for name in chosen:
        s = status(codes.get(name))
        per[name.split(".x_")[0].split(".xǁ")[0]][s] += 1
        if s == "survived":
            survivors.append(name)
    total: Counter[str] = sum(per.values(), Counter())
    for module, c in sorted(per.items()):
        print(f"{module:45} " + "  ".join(f"{k} {v}" for k, v in sorted(c.items())))
    scored = total["killed"] + total["survived"]
    print(
        f"score: {total['killed']}/{scored} killed of the covered mutants run "
        f"({100 * total['killed'] / max(1, scored):.1f}%); not covered {total['not covered']}, "
        f"not run {total['not run']}, other {total['other']}"
    )
    print("survivors:\n  " + "\n  ".join(survivors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
