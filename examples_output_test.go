package quorumlock_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every Example in the repository, in every module, says what it prints,
// so that go test runs it and checks the output; one without an Output
// comment is only compiled. go/doc decides, as go test does: an Output
// comment that runs on from another comment is no Output comment.
func TestExamples_EveryOneChecksItsOutput(t *testing.T) {
	files, examples := 0, 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// The directories the go command ignores.
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, e := range doc.Examples(f) {
			examples++
			assert.True(t, e.Output != "" || e.EmptyOutput,
				"%s: Example%s has no // Output: comment, so go test only compiles it", path, e.Name)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, examples, 20, "examples found in %d test files", files)
}
