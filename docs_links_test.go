package quorumlock_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docPages returns the pages the link and snippet tests read: the README
// and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages, "docs/ has no pages")
	return append([]string{"README.md"}, pages...)
}

// mdLine is one line of a Markdown page, with what the link and snippet
// tests need to know of it.
type mdLine struct {
	n      int    // 1-based line number
	text   string // the line as written
	code   bool   // inside a fenced code block, or its fence
	fence  string // the opening fence's info string ("go", "sh", ...), on the opening line only
	closes bool   // the closing fence of a block
}

// readMarkdown splits a page into lines and marks its fenced code blocks.
func readMarkdown(t *testing.T, path string) []mdLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []mdLine
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := mdLine{n: n, text: sc.Text()}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l.text), "```"); ok {
			l.code = true
			if in {
				l.closes = true
			} else {
				l.fence = strings.TrimSpace(rest)
			}
			in = !in
		} else {
			l.code = in
		}
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	require.False(t, in, "%s: a code block is not closed", path)
	return out
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdCodeSpan = regexp.MustCompile("`[^`]*`")
	mdHeading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdInline   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors returns the anchors GitHub makes for a page's headings: the
// heading's text, lower-cased, without punctuation, spaces as hyphens, and
// -1, -2, ... after the second and later uses of the same one.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range readMarkdown(t, path) {
		if l.code {
			continue
		}
		m := mdHeading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		slug := slugOf(m[2])
		if k := seen[slug]; k > 0 {
			out[slug+"-"+strconv.Itoa(k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugOf is GitHub's anchor for a heading's text.
func slugOf(heading string) string {
	text := mdInline.ReplaceAllString(heading, "$1") // a link's text stays, its target goes
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every relative link in the README and docs/ leads to a file or directory
// of the repository, and a link with an #anchor into a Markdown page to one
// of that page's headings.
func TestDocs_EveryRelativeLinkResolves(t *testing.T) {
	checked := 0
	cache := map[string]map[string]bool{}
	for _, page := range docPages(t) {
		for _, l := range readMarkdown(t, page) {
			if l.code {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(mdCodeSpan.ReplaceAllString(l.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %s", page, l.n, target)
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s: no such file or directory: %s", where, path)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s: an anchor into a file that is not Markdown", where)
					continue
				}
				if cache[path] == nil {
					cache[path] = anchors(t, path)
				}
				if !cache[path][anchor] {
					t.Errorf("%s: %s has no heading with anchor #%s", where, path, anchor)
				}
			}
		}
	}
	require.Greater(t, checked, 20, "the pages' relative links were found")
}

// snippetImports are the packages a Go snippet that is not a whole file may
// use, by the name it uses them by; its imports are those of the names it
// uses and does not declare.
var snippetImports = map[string]string{
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"log":           "log",
	"os":            "os",
	"slog":          "log/slog",
	"sql":           "database/sql",
	"strings":       "strings",
	"testing":       "testing",
	"time":          "time",
	"clock":         "github.com/quorumlock/quorumlock/clock",
	"driver":        "github.com/quorumlock/quorumlock/driver",
	"fencing":       "github.com/quorumlock/quorumlock/fencing",
	"redigo":        "github.com/quorumlock/quorumlock/driver/redigo",
	"redlock":       "github.com/quorumlock/quorumlock/redlock",
	"redlocktest":   "github.com/quorumlock/quorumlock/redlocktest",
	"goredis":       "github.com/quorumlock/quorumlock/driver/goredis",
	"redis":         "github.com/redis/go-redis/v9",
	"rueidisdriver": "github.com/quorumlock/quorumlock/driver/rueidis",
	"rueidis":       "github.com/redis/rueidis",
	"otel":          "github.com/quorumlock/quorumlock/otel",
}

// snippetParams are what a snippet of statements may use without declaring
// it: the names a reader of the docs has at hand where such code goes.
const snippetParams = "ctx context.Context, c *redlock.Client, l *redlock.Lock, db *sql.DB"

// snippetModules are the modules snippets compile in, by an import that
// takes a snippet there; the rest compile in the library's module.
var snippetModules = map[string]string{
	"github.com/redis/go-redis/v9":                    filepath.Join("driver", "goredis"),
	"github.com/quorumlock/quorumlock/driver/goredis": filepath.Join("driver", "goredis"),
	"github.com/redis/rueidis":                        filepath.Join("driver", "rueidis"),
	"github.com/quorumlock/quorumlock/driver/rueidis": filepath.Join("driver", "rueidis"),
	"github.com/quorumlock/quorumlock/otel":           "otel",
}

// snippet is one ```go block of a page, made into a Go file.
type snippet struct {
	page   string
	line   int // of the block's first line of code
	src    string
	module string // directory of the module it compiles in
}

// goSnippets returns every ```go block of the README and docs/.
func goSnippets(t *testing.T) []snippet {
	t.Helper()
	var out []snippet
	for _, page := range docPages(t) {
		var cur *snippet
		var body []string
		for _, l := range readMarkdown(t, page) {
			switch {
			case l.fence == "go":
				cur, body = &snippet{page: page, line: l.n + 1}, nil
			case cur != nil && l.closes:
				cur.src = strings.Join(body, "\n") + "\n"
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				body = append(body, l.text)
			}
		}
	}
	return out
}

// asFile makes a snippet a Go file of package pkg: a whole file as it is;
// declarations with the imports of the names they use; statements, the
// same, as the body of a function given snippetParams. A //line directive
// points compiler errors at the page.
func asFile(t *testing.T, s snippet, pkg string) (file string, imports []string) {
	t.Helper()
	at := fmt.Sprintf("//line %s:%d\n", s.page, s.line)
	if strings.HasPrefix(strings.TrimSpace(s.src), "package ") {
		f, err := parser.ParseFile(token.NewFileSet(), s.page, s.src, parser.ImportsOnly)
		require.NoError(t, err, "%s:%d: the snippet does not parse", s.page, s.line)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imports = append(imports, p)
		}
		return at + s.src, imports
	}
	body := "package " + pkg + "\n\n" + at + s.src
	wrapped := false
	f, err := parser.ParseFile(token.NewFileSet(), s.page, body, 0)
	if err != nil {
		body = "package " + pkg + "\n\nfunc _(" + snippetParams + ") error {\n" + at + s.src + "\treturn nil\n}\n"
		f, err = parser.ParseFile(token.NewFileSet(), s.page, body, 0)
		require.NoError(t, err, "%s:%d: the snippet parses neither as declarations nor as statements", s.page, s.line)
		wrapped = true
	}
	used := map[string]bool{}
	if wrapped {
		used["context"], used["redlock"], used["sql"] = true, true, true // snippetParams
	}
	for _, id := range f.Unresolved { // names neither the snippet nor the universe declares

		if _, ok := snippetImports[id.Name]; ok {
			used[id.Name] = true
		}
	}
	var names []string
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("package " + pkg + "\n\nimport (\n")
	for _, name := range names {
		imports = append(imports, snippetImports[name])
		fmt.Fprintf(&b, "\t%s %q\n", name, snippetImports[name])
	}
	b.WriteString(")\n")
	_, rest, _ := strings.Cut(body, "\n\n")
	return b.String() + "\n" + rest, imports
}

// Every Go snippet of the README and docs/ compiles: whole files as they
// are, fragments in a function or file made around them (see asFile). Each
// compiles in the module its imports need, the driver adapters' included,
// in a directory below the module whose name starts with "_", which ./...
// never matches, with one go build per module.
func TestDocs_EveryGoSnippetCompiles(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	snippets := goSnippets(t)
	require.Greater(t, len(snippets), 8, "the pages' Go snippets were found")

	byModule := map[string][]string{} // module directory: package directories, relative to it
	dirs := map[string]string{}       // module directory: its temporary directory
	for i, s := range snippets {
		pkg := fmt.Sprintf("snippet%02d", i)
		src, imports := asFile(t, s, pkg)
		module := "."
		for _, im := range imports {
			if m, ok := snippetModules[im]; ok {
				module = m
			}
		}
		if _, ok := dirs[module]; !ok {
			dir, err := os.MkdirTemp(module, "_docsnippets")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			dirs[module] = dir
		}
		dir := filepath.Join(dirs[module], pkg)
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.go"), []byte(src), 0o644))
		rel, err := filepath.Rel(module, dir)
		require.NoError(t, err)
		byModule[module] = append(byModule[module], "./"+filepath.ToSlash(rel))
	}
	modules := make([]string, 0, len(byModule))
	for m := range byModule {
		modules = append(modules, m)
	}
	sort.Strings(modules)
	for _, m := range modules {
		cmd := exec.Command(goBin, append([]string{"build"}, byModule[m]...)...)
		cmd.Dir = m
		out, err := cmd.CombinedOutput()
		if assert.NoError(t, err, "in module %s, the snippets do not compile:\n%s", m, out) {
			t.Logf("module %s: %d snippets compiled", m, len(byModule[m]))
		}
	}
	assert.True(t, slices.Contains(modules, filepath.Join("driver", "goredis")), "no snippet compiled with go-redis")
	assert.True(t, slices.Contains(modules, filepath.Join("driver", "rueidis")), "no snippet compiled with rueidis")
}
