"""The Go builds (`make pulumi-cli`, the SDK generator, the Go example) share their compiled
modules: Go's build cache reuses a package only when its module and everything below it are
at the same versions, so a module the YAML language host, the SDK generator or the Go
example shares with the CLI is pinned at the CLI's version (the host's own pulumi pkg/sdk
excepted: it does not compile against the CLI's)."""

from __future__ import annotations

import re
from pathlib import Path

from tests import PROJECT_ROOT

CLI = PROJECT_ROOT / "tools" / "pulumi" / "go.mod"
SHARING = {
    PROJECT_ROOT / "tools" / "pulumi-yaml" / "go.mod": {
        "github.com/pulumi/pulumi/pkg/v3",
        "github.com/pulumi/pulumi/sdk/v3",
    },
    PROJECT_ROOT / "tools" / "sdkgen" / "go.mod": set(),
    PROJECT_ROOT / "examples" / "go-local" / "go.mod": set(),
}


def requirements(go_mod: Path) -> dict[str, str]:
    """Module path -> version of every ``require`` of ``go_mod``."""
    text = go_mod.read_text(encoding="utf-8")
    blocks = re.findall(r"^require \((.*?)^\)", text, re.MULTILINE | re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines()]
    lines += re.findall(r"^require (\S+ \S+)", text, re.MULTILINE)
    found = {}
    for line in lines:
        fields = line.split("//", 1)[0].split()
        if len(fields) == 2:
            found[fields[0]] = fields[1]
    return found


def test_modules_shared_with_the_cli_are_at_its_versions() -> None:
    cli = requirements(CLI)
    assert "google.golang.org/grpc" in cli
    for go_mod, own in SHARING.items():
        theirs = requirements(go_mod)
        other = {
            module: (version, cli[module])
            for module, version in theirs.items()
            if module in cli and module not in own and version != cli[module]
        }
        assert not other, f"{go_mod.relative_to(PROJECT_ROOT)}: (its version, the CLI's) {other}"
