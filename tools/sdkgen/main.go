// sdkgen writes the typed SDKs of the vertex-training package from its schema, with
// Pulumi's own code generators at the release pinned in this module's go.mod (the same
// versions as tools/pulumi: the CLI that runs the programs generates nothing else).
//
//	go run . SCHEMA.json OUT_DIR   # writes OUT_DIR/nodejs and OUT_DIR/go
//
// `pulumi package gen-sdk` would do the same through the language plugins, which are
// not served where the CLI is built from its modules; the generators themselves are.
// Each output directory is replaced whole, so a type that goes leaves no file behind.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "vertex-training sdkgen"

// noExternalPackages is the loader the schema binds with: it references no other package.
type noExternalPackages struct{}

func (noExternalPackages) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema references package %q: it must reference none", name)
}

func (l noExternalPackages) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.LoadPackage(d.Name, d.Version)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sdkgen SCHEMA.json OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

func bind(path string) (*schema.Package, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pkg, diags, err := schema.BindSpec(spec, noExternalPackages{}, schema.ValidationOptions{})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return pkg, nil
}

// sdkVersion is the Go SDK this tool was built with: the one the Go SDK's module requires.
func sdkVersion() string {
	info, _ := debug.ReadBuildInfo()
	for _, dep := range info.Deps {
		if dep.Path == "github.com/pulumi/pulumi/sdk/v3" {
			return dep.Version
		}
	}
	panic("built without github.com/pulumi/pulumi/sdk/v3")
}

func run(schemaPath, out string) error {
	// Each generator reads the package's language options as its own: bind once per language.
	pkg, err := bind(schemaPath)
	if err != nil {
		return err
	}
	files, err := nodejs.GeneratePackage(tool, pkg, nil, nil, false, nil)
	if err != nil {
		return err
	}
	if files["package.json"], err = compiledEntryPoint(files["package.json"]); err != nil {
		return err
	}
	if err := write(filepath.Join(out, "nodejs"), files); err != nil {
		return err
	}
	if pkg, err = bind(schemaPath); err != nil {
		return err
	}
	if files, err = gogen.GeneratePackage(tool, pkg, nil); err != nil {
		return err
	}
	info := pkg.Language["go"].(gogen.GoPackageInfo)
	files["go.mod"] = []byte(fmt.Sprintf("module %s\n\ngo 1.25\n\nrequire github.com/pulumi/pulumi/sdk/v3 %s\n",
		info.ModulePath, sdkVersion()))
	return write(filepath.Join(out, "go"), files)
}

// compiledEntryPoint adds where `tsc` (the package's build script) puts the package to
// its package.json: a program depending on the package by path compiles it there.
func compiledEntryPoint(packageJSON []byte) ([]byte, error) {
	var npm map[string]any
	if err := json.Unmarshal(packageJSON, &npm); err != nil {
		return nil, err
	}
	npm["main"] = "bin/index.js"
	npm["types"] = "bin/index.d.ts"
	out, err := json.MarshalIndent(npm, "", "    ")
	return append(out, '\n'), err
}

func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
