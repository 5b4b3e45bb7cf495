// The Pulumi CLI at the version of the Python SDK pinned in requirements.lock, built from
// its Go module. Upstream's own go.mod files carry replace directives, which
// `go install <module>@<version>` refuses, so this wrapper requires the modules and
// repeats the replaces they need. build.sh adds the Python language host (a module with no
// version tag of its own) at the release tag's commit and installs both into .tools/bin.
module vertex-training/tools/pulumi

go 1.26

tool github.com/pulumi/pulumi/pkg/v3/cmd/pulumi

require (
	github.com/pulumi/pulumi/pkg/v3 v3.272.0
	github.com/pulumi/pulumi/sdk/v3 v3.272.0
)

// From upstream's pkg/go.mod and sdk/python/cmd/pulumi-language-python/go.mod; their
// other replaces point at sibling directories of the monorepo, which the requires above
// stand for.
replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
