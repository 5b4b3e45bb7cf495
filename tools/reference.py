"""Writes the generated docs pages: docs/reference.md, every public name of
``vertex_training`` with its docstring and, for the Args, each field's type, default and
docstring (read by pdoc from the source); docs/config.md, every stack config key from the
models in ``vertex_training/stack/settings.py`` and every stack output of ``__main__.py``
with the docstring of what it exports. ``make docs`` runs it; ``tests/test_reference.py``
fails when a page is stale.

    .venv/bin/python tools/reference.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib
import json
import sys
import warnings
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REFERENCE_PAGE = ROOT / "docs" / "reference.md"
CONFIG_PAGE = ROOT / "docs" / "config.md"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(field: dataclasses.Field[object]) -> str:
    if field.default is not dataclasses.MISSING:
        return f"`{field.default!r}`"
    if field.default_factory is not dataclasses.MISSING:
        return f"`{field.default_factory()!r}`"
    return "required"


def render_reference() -> str:
    import pdoc.doc

    import vertex_training as vt
    from vertex_training.jobs.body import camel

    lines = [
        "# `vertex_training` reference",
        "",
        "Generated from the docstrings by `tools/reference.py` (`make docs`); do not edit.",
        "Every name below is importable as `vt.<name>` after `import vertex_training as vt`.",
        "",
    ]
    modules: dict[str, pdoc.doc.Module] = {}
    for name in sorted(vt.__all__, key=lambda n: (not n[0].isupper(), n)):
        home = vt._HOMES.get(name, vt._ARGS)
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
                if not field.metadata.get("argument", True):
                    continue  # the program's, never given (``judged``)
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


def _config_default(value: object) -> str:
    # As the stack file writes it: "" is "not set" (a schema default cannot be null).
    if value is None:
        return '`""`'
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def _output_docs() -> list[tuple[str, str]]:
    """Each ``pulumi.export`` of ``__main__.py`` and the docstring of what it exports: a
    ``TrainingPlatform`` attribute or method, else the program's function that builds it."""
    import pdoc.doc

    from vertex_training.platform import platform as platform_module

    program = ast.parse((ROOT / "__main__.py").read_text(encoding="utf-8"))
    functions = {
        node.name: ast.get_docstring(node) or ""
        for node in program.body
        if isinstance(node, ast.FunctionDef)
    }
    platform = pdoc.doc.Module(platform_module).get("TrainingPlatform")
    assert isinstance(platform, pdoc.doc.Class)
    rows = []
    for node in ast.walk(program):
        if not (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "pulumi.export"
            and isinstance(node.args[0], ast.Constant)
        ):
            continue
        name, value = node.args[0].value, node.args[1]
        target = value.func if isinstance(value, ast.Call) else value
        if isinstance(target, ast.Attribute):
            member = platform.get(target.attr)
            text = member.docstring if member is not None else ""
            if text and target is not value:
                text += f" Here `{ast.unparse(value)}`."
        else:
            text = next(
                (
                    functions[call.func.id]
                    for call in ast.walk(value)
                    if isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id in functions
                ),
                "",
            )
        if not text:
            raise SystemExit(
                f"stack output {name!r} has no description: give what it exports a docstring"
            )
        rows.append((str(name), text))
    return rows


def render_config() -> str:
    from vertex_training.stack.settings import PROJECT_NAME, SECTIONS

    # What each key means is written once, in the project schema.
    meaning = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))["config"]
    lines = [
        "# Stack config keys and outputs",
        "",
        "Generated from `Pulumi.yaml`, `vertex_training/stack/settings.py` and `__main__.py`",
        "by `tools/reference.py` (`make docs`); do not edit.",
        "",
        f"Every key lives in the `{PROJECT_NAME}:` namespace (`{PROJECT_NAME}:region`) and is",
        "declared, typed and with its default, in `Pulumi.yaml` as well (a test holds the two",
        "equal). `gcp:project`, the Google Cloud project, is required on `dev` and `prod`",
        "stacks. `vertex_training/stack/config.py` is the only reader: before any resource is",
        "registered it judges every value by the rules the Args are judged by, and names the",
        "key, what is wrong (in the words of the Python Args' error), what would be valid and",
        "the `pulumi config set` that fixes it, every problem in one run. An unknown key is",
        'an error with a "did you mean"; so is a namespace that misspells the project\'s',
        "(`vertex-trainng:jobs`), while other providers' namespaces (`gcp:`, `pulumi:`) pass.",
        "A `local` stack has no Workbench instance: each `workbench*` key it sets to other",
        "than its default is a warning that the key is ignored.",
        "",
    ]
    for section, model in SECTIONS.items():
        lines += [
            f"## {section}",
            "",
            "| key | default | meaning | valid |",
            "|---|---|---|---|",
        ]
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            lines.append(
                f"| `{info.alias or name}` | {_config_default(info.default)} | "
                f"{_cell(meaning[info.alias]['description'])} | {_cell(str(extra['valid']))} |"
            )
        lines.append("")
    lines += [
        "## Outputs",
        "",
        "What `pulumi stack output --stack <stack>` shows for this repository's program. On",
        "the `local` stack they point into this checkout: `project` is `local`, `bucketUrl`",
        "a directory under `localRoot` and `imageReference` `trainer:local`.",
        "",
        "| output | |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in _output_docs()]
    return "\n".join(lines).rstrip() + "\n"


PAGES = {REFERENCE_PAGE: render_reference, CONFIG_PAGE: render_config}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a page is stale")
    check = parser.parse_args().check
    stale = []
    for page, render in PAGES.items():
        with warnings.catch_warnings():
            # pdoc cannot evaluate pulumi.Input[...] (a generic alias): the text is kept as is.
            warnings.simplefilter("ignore")
            text = render()
        if check:
            if not page.is_file() or page.read_text(encoding="utf-8") != text:
                stale.append(page)
        else:
            page.write_text(text, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
    for page in stale:
        print(f"{page.relative_to(ROOT)} is stale: run make docs", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
