"""Writes docs/reference.md: every public name of ``vertex_training`` with its docstring
and, for the Args, each field's type, default and docstring (read by pdoc from the
source). ``make docs`` runs it; ``tests/test_reference.py`` fails when it is stale.

    .venv/bin/python tools/reference.py [--check]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUTPUT = ROOT / "docs" / "reference.md"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(field: dataclasses.Field[object]) -> str:
    if field.default is not dataclasses.MISSING:
        return f"`{field.default!r}`"
    if field.default_factory is not dataclasses.MISSING:
        return f"`{field.default_factory()!r}`"
    return "required"


def render() -> str:
    import pdoc.doc

    import vertex_training as vt
    from vertex_training.jobs.fields import camel

    lines = [
        "# `vertex_training` reference",
        "",
        "Generated from the docstrings by `tools/reference.py` (`make docs`); do not edit.",
        "Every name below is importable as `vt.<name>` after `import vertex_training as vt`.",
        "",
    ]
    modules: dict[str, pdoc.doc.Module] = {}
    for name in sorted(vt.__all__, key=lambda n: (not n[0].isupper(), n)):
        home = vt._HOMES[name]
        module = modules.get(home)
        if module is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = modules[home] = pdoc.doc.Module(importlib.import_module(home))
        doc = module.get(name)
        value = getattr(vt, name)
        lines += [f"## `{name}`", ""]
        if doc is not None and doc.docstring:
            lines += [doc.docstring.strip(), ""]
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            lines += ["| field | YAML key | type | default | |", "|---|---|---|---|---|"]
            for field in dataclasses.fields(value):
                member = doc.get(field.name) if isinstance(doc, pdoc.doc.Class) else None
                text = member.docstring if member is not None else ""
                kind = (
                    field.type
                    if isinstance(field.type, str)
                    else getattr(field.type, "__name__", "")
                )
                lines.append(
                    f"| `{field.name}` | `{camel(field.name)}` | `{_cell(str(kind))}` | "
                    f"{_default(field)} | {_cell(text)} |"
                )
            lines.append("")
        elif isinstance(doc, pdoc.doc.Class):
            outputs = [
                m
                for m in doc.own_members
                if isinstance(m, pdoc.doc.Variable) and not m.name.startswith("_") and m.docstring
            ]
            if outputs:
                lines += ["| attribute | |", "|---|---|"]
                lines += [f"| `{m.name}` | {_cell(m.docstring)} |" for m in outputs]
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    with warnings.catch_warnings():
        # pdoc cannot evaluate pulumi.Input[...] (a generic alias): the text is kept as is.
        warnings.simplefilter("ignore")
        text = render()
    if parser.parse_args().check:
        if not OUTPUT.is_file() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run make docs", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
