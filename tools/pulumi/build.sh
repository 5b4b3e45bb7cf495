#!/usr/bin/env bash
# Builds the Pulumi CLI pinned in tools/pulumi/go.mod (with its committed go.sum) into
# BIN_DIR, with the scripts the same release's sdk module ships for Python beside it:
# `pulumi-resource-pulumi-python` starts dynamic providers with the project's Python. Go's
# module and build caches stay in the user's cache, so a rebuild is quick.
#
# The Python language host is added only where its module can be had (today no proxy
# serves it): without it, programs run inline through the Automation API
# (python -m vertex_training.stack), which needs no language host.
#
#   tools/pulumi/build.sh .tools/bin
set -euo pipefail

bin_dir=$(mkdir -p "${1:?usage: build.sh BIN_DIR}" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
pkg=github.com/pulumi/pulumi/pkg/v3
sdk=github.com/pulumi/pulumi/sdk/v3
language_host=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
version=$(go list -mod=readonly -m -f '{{.Version}}' "$pkg")
ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version"

# -mod=readonly: the versions and checksums are the committed ones, or the build fails.
GOFLAGS=-mod=readonly GOBIN="$bin_dir" go install -ldflags "$ldflags" tool

# Beside the CLI, as in the release archive (module files lose their mode).
sdk_dir=$(go list -mod=readonly -m -f '{{.Dir}}' "$sdk")
install -m 0755 "$sdk_dir/python/dist/pulumi-resource-pulumi-python" \
  "$sdk_dir/python/cmd/pulumi-language-python-exec" "$bin_dir/"

# Optional: the language host at the release tag's commit (it has no tag of its own), in a
# scratch copy of this module so that the committed go.mod/go.sum stay as they are.
commit=$(go list -mod=readonly -m -f '{{with .Origin}}{{.Hash}}{{end}}' "$sdk" 2>/dev/null || true)
commit_time=$(go list -mod=readonly -m -f '{{.Time.UTC.Format "20060102150405"}}' "$sdk" 2>/dev/null || true)
host_note="not served by the module proxy"
if [ ${#commit} -eq 40 ] && [ -n "$commit_time" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp go.mod go.sum "$scratch/"
  if (cd "$scratch" &&
      go mod edit -require="$language_host@v3.0.0-$commit_time-${commit:0:12}" \
        -tool="$language_host" &&
      go mod tidy >/dev/null 2>&1 &&
      GOBIN="$bin_dir" go install -ldflags "$ldflags" "$language_host" >/dev/null 2>&1); then
    host_note="built"
  fi
fi

built=$("$bin_dir/pulumi" version)
[ "$built" = "$version" ] || { echo "built pulumi reports $built, not $version" >&2; exit 1; }
echo "Built Pulumi $built into $bin_dir: $(cd "$bin_dir" && echo *)"
echo "Python language host: $host_note (python -m vertex_training.stack runs programs without it)."
