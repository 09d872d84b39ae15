package quorumlock_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every exported identifier of every public package has a doc comment:
// functions, types, methods, constants, variables, and the exported fields
// and interface methods of exported types. Public are the library's module,
// the driver adapters' modules and the OpenTelemetry observer's (otel);
// internal/ packages, commands, test files
// and the tool modules (the chaos suite, the benchmarks, the fencing
// guard's database tests) are not.
func TestDocs_EveryExportedIdentifierIsDocumented(t *testing.T) {
	var missing []string
	dirs := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal" || name == "cmd") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." && path != "otel" && !strings.HasPrefix(path, "driver"+string(filepath.Separator)) {
			return filepath.SkipDir // a tool module
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, path, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, p := range pkgs {
			if p.Name == "main" {
				continue
			}
			dirs++
			missing = append(missing, undocumented(path, doc.New(p, path, 0))...)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, dirs, 5, "the walk found the packages")
	assert.Empty(t, missing, "exported identifiers without a doc comment")
}

func undocumented(dir string, d *doc.Package) []string {
	var out []string
	miss := func(kind, name, text string) {
		if strings.TrimSpace(text) == "" {
			out = append(out, dir+": "+kind+" "+name)
		}
	}
	miss("package", d.Name, d.Doc)
	values := func(vs []*doc.Value, kind string) {
		for _, v := range vs {
			if v.Doc != "" {
				continue // a group's comment documents its members
			}
			for _, s := range v.Decl.Specs {
				vs := s.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.IsExported() {
						miss(kind, n.Name, vs.Doc.Text()+vs.Comment.Text())
					}
				}
			}
		}
	}
	values(d.Consts, "const")
	values(d.Vars, "var")
	for _, f := range d.Funcs {
		miss("func", f.Name, f.Doc)
	}
	for _, t := range d.Types {
		miss("type", t.Name, t.Doc)
		values(t.Consts, "const")
		values(t.Vars, "var")
		for _, f := range t.Funcs {
			miss("func", f.Name, f.Doc)
		}
		for _, m := range t.Methods {
			miss("method", t.Name+"."+m.Name, m.Doc)
		}
		var fields *ast.FieldList
		switch x := t.Decl.Specs[0].(*ast.TypeSpec).Type.(type) {
		case *ast.StructType:
			fields = x.Fields
		case *ast.InterfaceType:
			fields = x.Methods
		}
		if fields == nil {
			continue
		}
		for _, f := range fields.List {
			for _, n := range f.Names {
				if n.IsExported() {
					miss("field", t.Name+"."+n.Name, f.Doc.Text()+f.Comment.Text())
				}
			}
		}
	}
	return out
}
