// Package testcorpus finds the shared photo corpus for tests. It lives
// outside the repository: $SLUICE_CORPUS, or ../shared/corpus beside the
// repository root. Tests that need it skip when it is absent, so that a
// fresh clone still passes, or fail where SLUICE_REQUIRE_CORPUS=1 (CI,
// scripts/gpu.sh).
package testcorpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir is the corpus's directory; without it the test skips, or fails
// where SLUICE_REQUIRE_CORPUS=1.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := Find()
	if err != nil {
		msg := fmt.Sprintf("image corpus not found (set SLUICE_CORPUS): %v", err)
		if os.Getenv("SLUICE_REQUIRE_CORPUS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// Find is the corpus's directory, holding its MANIFEST.tsv, or why not.
func Find() (string, error) {
	dir := os.Getenv("SLUICE_CORPUS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "..", "shared", "corpus")
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.tsv")); err != nil {
		return "", err
	}
	return dir, nil
}

// RepoRoot is the directory holding go.mod, above the test's directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}
