"""The plot of the scale benchmark: orders Planned and Ready over time (matplotlib, PNG)."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from bench.scale.track import Sample


def plot(samples: Sequence[Sample], *, applied: float, orders: int, title: str, out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = list(samples)  # the sampler may still append
    t = [s.t - applied for s in samples]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.plot(t, [s.decided for s in samples], label="decided (Planned=True or Pending/NoCapacity)", lw=1.2)
    ax.plot(t, [s.planned for s in samples], label="Planned=True", lw=1.6)
    ax.plot(t, [s.ready for s in samples], label="Ready", lw=1.6)
    ax.axvline(0, color="grey", ls=":", lw=1)
    ax.axhline(orders, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("seconds since the last order was applied")
    ax.set_ylabel("orders")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
