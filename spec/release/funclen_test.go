package release_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar"
)

// maxFuncLines is the house's bound on a shipped function (issue 24 item 5).
const maxFuncLines = 80

// TestShippedFunctionsFitOrSayWhy: every function package cellguard ships
// (packages/cellguard/spec's files, less its excluded_files; not the
// vendored modules) is at most 80 lines, or its doc comment says why it
// must be longer, in a sentence with "long because".
func TestShippedFunctionsFitOrSayWhy(t *testing.T) {
	var spec pkgSpec
	readYAML(t, "packages/cellguard/spec", &spec)
	src := filepath.Join(repoRoot, "src")
	fset := token.NewFileSet()
	var files, long int
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || strings.HasPrefix(rel, "vendor/") || !matchAny(t, spec.Files, rel) || matchAny(t, spec.ExcludedFiles, rel) {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n <= maxFuncLines {
				continue
			}
			long++
			if fd.Doc == nil || !strings.Contains(fd.Doc.Text(), "long because") {
				t.Errorf("src/%s:%d: %s is %d lines (at most %d), and its doc comment does not say why it is long (\"long because ...\")",
					rel, fset.Position(fd.Pos()).Line, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked only %d shipped Go files under src/: the package spec's globs no longer match", files)
	}
	t.Logf("%d shipped Go files; %d functions over %d lines", files, long, maxFuncLines)
}

func matchAny(t *testing.T, patterns []string, rel string) bool {
	t.Helper()
	for _, p := range patterns {
		ok, err := doublestar.Match(p, rel)
		if err != nil {
			t.Fatalf("package spec glob %q: %v", p, err)
		}
		if ok {
			return true
		}
	}
	return false
}
