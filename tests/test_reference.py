"""The generated docs pages (docs/reference.md, docs/config.md) must match the code, and
every docs page is reachable from the README."""

from __future__ import annotations

import re
import subprocess
import sys

from tests import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"


def test_the_generated_pages_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tools" / "reference.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_reference_names_every_public_name() -> None:
    import vertex_training as vt

    text = (DOCS / "reference.md").read_text(encoding="utf-8")
    for name in vt.__all__:
        assert f"## `{name}`" in text, name


def first_column(text: str) -> set[str]:
    """The code spans in the first column of the tables of ``text``."""
    return {
        name
        for row in text.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([^`]+)`", row.split("|")[1])
    }


def test_the_config_page_lists_every_config_key() -> None:
    # A new key (or a gone one) fails here as well as in the staleness check above.
    from vertex_training.stack.settings import known_config_keys

    page = (DOCS / "config.md").read_text(encoding="utf-8")
    keys_part = page.partition("\n## Outputs\n")[0]
    assert first_column(keys_part) == set(known_config_keys())
    assert "`gcp:project`" in keys_part


def test_the_config_page_describes_every_stack_output() -> None:
    program = (PROJECT_ROOT / "__main__.py").read_text(encoding="utf-8")
    exported = set(re.findall(r'pulumi\.export\("([^"]+)"', program))
    page = (DOCS / "config.md").read_text(encoding="utf-8")
    described = first_column(page.partition("\n## Outputs\n")[2])
    assert exported and described == exported


def test_every_docs_page_is_linked_from_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", readme))
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert pages <= linked, sorted(pages - linked)
