#!/usr/bin/env bash
# Builds the YAML language host pinned in tools/pulumi-yaml/go.mod (with its committed
# go.sum) into BIN_DIR, beside the CLI: the CLI finds `pulumi-language-yaml` on its PATH.
# Quick when BIN_DIR already holds that release.
#
#   tools/pulumi-yaml/build.sh .tools/bin
set -euo pipefail

bin_dir=$(mkdir -p "${1:?usage: build.sh BIN_DIR}" && cd "$1" && pwd)
cd "$(dirname "$0")"
module=github.com/pulumi/pulumi-yaml
version=$(go list -mod=readonly -m -f '{{.Version}}' "$module")
stamp="$bin_dir/.pulumi-language-yaml.version"
if [ -x "$bin_dir/pulumi-language-yaml" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
echo "Building the YAML language host $version from its Go module into $bin_dir."
# -mod=readonly: the versions and checksums are the committed ones, or the build fails.
GOFLAGS=-mod=readonly GOBIN="$bin_dir" go install \
  -ldflags "-X $module/pkg/version.Version=${version#v}" tool
echo "$version" >"$stamp"
