package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const architectureDoc = "docs/architecture.md"

// archRow is one row of the package table of docs/architecture.md: the
// directory its first cell names, and every name in backquotes of the row.
type archRow struct {
	dir   string
	names []string
}

var (
	archRowLine = regexp.MustCompile("^\\| `([a-z0-9_/]+)/?` \\|")
	backquoted  = regexp.MustCompile("`([^`]+)`")
)

// archRows parses the package table: its rows are the lines that start
// with a backquoted directory in the first cell.
func archRows(t *testing.T) []archRow {
	t.Helper()
	doc, err := os.ReadFile(repoFile(t, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	var rows []archRow
	for line := range strings.SplitSeq(string(doc), "\n") {
		m := archRowLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		r := archRow{dir: strings.TrimSuffix(m[1], "/")}
		for _, q := range backquoted.FindAllStringSubmatch(line, -1) {
			r.names = append(r.names, strings.TrimSuffix(q[1], "/"))
		}
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("%s: found %d rows in the package table, want one a top-level package at least", architectureDoc, len(rows))
	}
	return rows
}

// goPackageDirs lists the module's Go package directories, relative to the
// repository root and slash-separated: those with a .go file other than a
// test, as `go list ./...` finds them (no testdata, no directory whose name
// starts with "." or "_").
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	root := repoFile(t, ".")
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	if len(dirs) < 20 {
		t.Fatalf("found %d Go package directories under %s, want the module's", len(dirs), root)
	}
	return dirs
}

// TestArchitectureDocPackages keeps the package table of
// docs/architecture.md true to the tree: every directory it gives a row
// exists and holds Go packages, every package it names by its path
// exists, and every Go package of the module is named, in a row of its
// own or in the row of the nearest directory above it that has one (by
// its path or by its path under that directory: internal/'s row names
// `bufpool` and `hostile/mkhostile`).
func TestArchitectureDocPackages(t *testing.T) {
	rows := archRows(t)
	pkgs := goPackageDirs(t)
	byDir := map[string]archRow{}
	for _, r := range rows {
		if _, dup := byDir[r.dir]; dup {
			t.Errorf("%s: two rows for %s/", architectureDoc, r.dir)
		}
		byDir[r.dir] = r
		under := slices.ContainsFunc(pkgs, func(p string) bool { return p == r.dir || strings.HasPrefix(p, r.dir+"/") })
		if !under {
			t.Errorf("%s: the row for %s/ names no Go package directory of the tree", architectureDoc, r.dir)
		}
		// A name of the row that is a path below its directory must be
		// one of the tree's packages (files, like queue.go, have a dot).
		for _, n := range r.names {
			if strings.HasPrefix(n, r.dir+"/") && !strings.ContainsAny(n, ".<* ") && !slices.Contains(pkgs, n) {
				t.Errorf("%s: the row for %s/ names %s, which is not a Go package directory", architectureDoc, r.dir, n)
			}
		}
	}
	for _, p := range pkgs {
		if _, ok := byDir[p]; ok {
			continue
		}
		// The nearest directory above p with a row of its own.
		var row archRow
		found := false
		for d := p; !found && strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			row, found = byDir[d]
		}
		if !found {
			t.Errorf("%s: package %s has no row, nor a row above it", architectureDoc, p)
			continue
		}
		rel := strings.TrimPrefix(p, row.dir+"/")
		if !slices.Contains(row.names, p) && !slices.Contains(row.names, rel) {
			t.Errorf("%s: package %s is not named in the row for %s/ (as `%s` or `%s`)", architectureDoc, p, row.dir, p, rel)
		}
	}
}
