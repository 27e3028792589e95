"""The model volume's size: the files the fetcher downloads, plus a margin. Pure.

``volume_bytes(facts)`` = the selected files (``facts.files``, ``controller.model_facts.files``)
x 1.1 + 1 GiB, rounded up to GiB by ``volume_quantity``. When the source does not list the files
with their sizes (a catalog model), the weights estimate (``estimate.disk_bytes``) plus 64 MiB for
configs and tokenizer stands for them.

The margin (docs/memory-estimate.md, "The model volume"):

- **10 %**: ext4 keeps 5 % of its blocks for root by default, and the fetcher runs as a non-root
  UID (Pod Security ``restricted``), so it cannot use them; the file system's own metadata (inode
  tables, journal) takes 1-2 % more of a formatted block volume;
- **1 GiB**: ``hf download --local-dir`` keeps its metadata under ``<dir>/.cache/huggingface`` and
  writes each file as ``*.incomplete`` before renaming it (no second copy, but a restarted fetcher
  may leave partial files behind until it resumes them); and room for the small files when the
  listing is only an estimate.
"""

from __future__ import annotations

import math

from controller.model_facts.facts import ModelFacts
from controller.planner.estimate import disk_bytes
from shared.quantity import GIB, to_quantity_gi

MARGIN_FACTOR = 1.1
MARGIN_BYTES = GIB
SMALL_FILES_ALLOWANCE = 64 * 2**20  # configs and tokenizer, when only the weights are known


def files_bytes(facts: ModelFacts) -> int:
    """The bytes the fetcher downloads: the selected files when all their sizes are known, else the
    weights estimate plus an allowance for configs and tokenizer."""
    sizes = list(facts.files.values())
    if sizes and all(s is not None for s in sizes):
        return sum(s for s in sizes if s is not None)
    return disk_bytes(facts) + SMALL_FILES_ALLOWANCE


def volume_bytes(facts: ModelFacts) -> int:
    return math.ceil(files_bytes(facts) * MARGIN_FACTOR) + MARGIN_BYTES


def volume_quantity(facts: ModelFacts) -> str:
    """The model volume's storage request, in whole GiB (``17Gi``)."""
    return to_quantity_gi(volume_bytes(facts))
