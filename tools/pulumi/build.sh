#!/usr/bin/env bash
# Builds the Pulumi CLI and its Python language host at one release from their Go modules
# (the ordinary `go` client; its module and build caches stay in the user's cache, so a
# second build is quick) and puts them, with the two small scripts the release ships for
# Python programs and dynamic providers, into BIN_DIR.
#
#   tools/pulumi/build.sh 3.272.0 .tools/bin
set -euo pipefail

version=${1:?usage: build.sh VERSION BIN_DIR}
bin_dir=$(mkdir -p "${2:?usage: build.sh VERSION BIN_DIR}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
sdk=github.com/pulumi/pulumi/sdk/v3
pkg=github.com/pulumi/pulumi/pkg/v3
language_host=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3

grep -qx "	$pkg v$version" "$here/go.mod" || {
  echo "tools/pulumi/go.mod does not pin $pkg v$version: change both together." >&2
  exit 1
}

# A copy of the wrapper module outside the repo: go mod tidy writes go.mod and go.sum.
work="${XDG_CACHE_HOME:-$HOME/.cache}/vertex-training/pulumi-$version"
rm -rf "$work" && mkdir -p "$work/bin" && cp "$here/go.mod" "$work/go.mod"
cd "$work"

problems=()
# The release tag (v$version, the same commit as sdk/v$version) is the commit the language
# host is pinned at: its module has no version tag of its own, so it is required at the
# pseudo-version of that commit.
release=$(go list -mod=mod -m -f '{{with .Origin}}{{.Hash}}{{end}} {{.Time.UTC.Format "20060102150405"}}' \
  "$sdk@v$version" 2>&1) || problems+=("go list -m $sdk@v$version: $release")
read -r commit commit_time <<<"$release" || true
if [ ${#problems[@]} -eq 0 ] && [ ${#commit} -ne 40 ]; then
  # Some proxies keep no origin for the sdk tag; the same release's pkg tag names it.
  release=$(go list -mod=mod -m -f '{{with .Origin}}{{.Hash}}{{end}} {{.Time.UTC.Format "20060102150405"}}' \
    "$pkg@v$version" 2>&1) || problems+=("go list -m $pkg@v$version: $release")
  read -r commit commit_time <<<"$release" || true
fi
if [ ${#problems[@]} -eq 0 ] && [ ${#commit} -ne 40 ]; then
  problems+=("go list -m -json $sdk@v$version and $pkg@v$version report no origin commit for the release tag")
fi
if ! out=$(go mod download "$pkg@v$version" 2>&1); then
  problems+=("go mod download $pkg@v$version: $out")
fi
if [ ${#problems[@]} -gt 0 ]; then
  echo "Cannot build the Pulumi CLI $version from its Go modules:" >&2
  printf '  - %s\n' "${problems[@]}" >&2
  exit 1
fi

go mod edit -require="$language_host@v3.0.0-$commit_time-${commit:0:12}" -tool="$language_host"
go mod tidy
# The same stamp as upstream's release build: `pulumi version` and plugin checks read it.
GOBIN="$work/bin" go install \
  -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$version" tool

# Beside the CLI, as in the release archive: the launcher of dynamic providers and of
# Python programs, taken from the same release's sdk module (module files lose their mode).
sdk_dir=$(go list -m -f '{{.Dir}}' "$sdk")
install -m 0755 "$sdk_dir/python/dist/pulumi-resource-pulumi-python" \
  "$sdk_dir/python/cmd/pulumi-language-python-exec" "$work/bin/"
install -m 0755 "$work"/bin/* "$bin_dir/"

built=$("$bin_dir/pulumi" version)
[ "$built" = "v$version" ] || { echo "built pulumi reports $built, not v$version" >&2; exit 1; }
echo "Built Pulumi $built into $bin_dir: $(cd "$bin_dir" && echo *)"
