"""The docs keep up with the code: every reason has a FAQ entry with the right phase, links resolve,
and the README opens with the two commands for a fresh machine."""

from __future__ import annotations

import pathlib
import re

import pytest

from shared import reasons

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAQ = (ROOT / "docs" / "faq.md").read_text()
CONDITION_TYPES = set(reasons.ALL_CONDITIONS)
REASONS = sorted(
    {
        value
        for name, value in vars(reasons).items()
        if name.isupper()
        and isinstance(value, str)
        and (value not in CONDITION_TYPES or value in ("Planned",))
    }
    | {"ScalingHealthy"}
)


def faq_entry(reason: str) -> str:
    match = re.search(rf"^### `{reason}`\n(.*?)(?=^##|\Z)", FAQ, flags=re.MULTILINE | re.DOTALL)
    assert match, f"docs/faq.md has no `### `{reason}`` entry"
    return match.group(1)


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_an_order_can_carry_has_a_faq_entry(reason: str) -> None:
    entry = faq_entry(reason)
    assert "**Condition:**" in entry
    assert len(entry.split()) > 15, "it says what the reason means and what it asks of the user"


@pytest.mark.parametrize("reason", sorted(reasons.TERMINAL | {reasons.SERVICE_UNHEALTHY}))
def test_a_reason_no_waiting_can_fix_is_documented_as_failed(reason: str) -> None:
    assert "**Phase:** Failed" in faq_entry(reason)


@pytest.mark.parametrize("reason", sorted(set(REASONS) - reasons.TERMINAL - {reasons.SERVICE_UNHEALTHY}))
def test_any_other_reason_is_not_documented_as_failed(reason: str) -> None:
    assert "**Phase:** Failed" not in faq_entry(reason)


def test_the_readme_opens_with_make_demo_and_make_test() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    assert block
    assert [line.split("#")[0].strip() for line in block.group(1).splitlines()] == ["make demo", "make test"]


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "README.md"]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_relative_links_point_at_files_that_exist(doc: pathlib.Path) -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    missing = [link for link in local if not (doc.parent / link).exists()]
    assert not missing, f"{doc.name}: broken links {missing}"
