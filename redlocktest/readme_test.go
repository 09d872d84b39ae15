package redlocktest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The docs' section on testing code that takes locks (docs/testing.md)
// shows the code of ExampleMasters, with the test body as a test function;
// the example is what go test checks, so the two must not drift apart.
func TestDocs_TestingCodeThatTakesLocks_IsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../docs/testing.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	_, section, ok := strings.Cut(string(readme), "\n## Testing code that takes locks\n")
	require.True(t, ok, "docs/testing.md has no section on testing code that takes locks")
	_, code, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no Go code")
	code, _, ok = strings.Cut(code, "```\n")
	require.True(t, ok, "the section's Go code does not end")

	const asTest, asExample = "func TestCloseBooks(t *testing.T) {", "func testCloseBooks(t testing.TB) {"
	require.Contains(t, code, asTest)
	code = strings.Replace(code, asTest, asExample, 1)
	assert.True(t, strings.Contains(string(example), code), "the code of docs/testing.md differs from ExampleMasters's:\n%s", code)
}
