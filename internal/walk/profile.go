package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// module is this module's path, which the profile puts before each file.
const module = "github.com/quorumlock/quorumlock/"

// file is one Go file the call entered, and the functions it ran there.
type file struct {
	path  string
	funcs []string
}

// read returns the files and functions whose blocks ran, from the counters
// written to dir, in the order of their paths.
func read(dir string) ([]file, error) {
	out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i", dir, "-o", filepath.Join(dir, "profile.txt")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool covdata: %v: %s", err, out)
	}
	prof, err := os.ReadFile(filepath.Join(dir, "profile.txt"))
	if err != nil {
		return nil, err
	}
	ran, err := parse(prof)
	if err != nil {
		return nil, err
	}
	var files []file
	for path, lines := range ran {
		if strings.HasPrefix(path, "internal/walk/") {
			continue
		}
		funcs, err := funcsAt(path, lines)
		if err != nil {
			return nil, err
		}
		files = append(files, file{path, funcs})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, nil
}

// parse returns, for each file of this module in a text coverage profile,
// the first lines of its blocks that ran.
func parse(prof []byte) (map[string][]int, error) {
	ran := map[string][]int{}
	sc := bufio.NewScanner(bytes.NewReader(prof))
	for sc.Scan() {
		// name.go:line.col,line.col statements count
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] == "0" {
			continue
		}
		name, pos, ok := strings.Cut(f[0], ":")
		if !ok || !strings.HasPrefix(name, module) {
			continue
		}
		first, _, _ := strings.Cut(pos, ".")
		line, err := strconv.Atoi(first)
		if err != nil {
			return nil, fmt.Errorf("profile line %q: %w", sc.Text(), err)
		}
		path := strings.TrimPrefix(name, module)
		ran[path] = append(ran[path], line)
	}
	return ran, sc.Err()
}

// funcsAt names the functions of the file at path that hold lines.
func funcsAt(path string, lines []int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		from, to := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		for _, l := range lines {
			if l >= from && l <= to && !seen[fd.Name.Name] {
				seen[fd.Name.Name] = true
				names = append(names, funcName(fd))
			}
		}
	}
	return names, nil
}

// funcName is fd's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// report writes one call's walk: a line a file, with the functions it ran.
func report(op string, files []file) {
	n := 0
	for _, f := range files {
		n += len(f.funcs)
	}
	fmt.Printf("%s: %d files, %d functions\n", op, len(files), n)
	for _, f := range files {
		fmt.Printf("  %-50s %s\n", f.path, strings.Join(f.funcs, " "))
	}
}

// beyond returns the paths of the files of walk that base did not enter.
func beyond(walk, base []file) []string {
	in := map[string]bool{}
	for _, f := range base {
		in[f.path] = true
	}
	var out []string
	for _, f := range walk {
		if !in[f.path] {
			out = append(out, f.path)
		}
	}
	return out
}
