package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// camelCase is a JSON field name as Kubernetes APIs spell them.
var camelCase = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// TestAPIConventions checks the API types against the Kubernetes API conventions that
// kube-api-linter enforces, on every exported struct of the *_types.go files: each field
// has a doc comment (kubectl explain shows it), a camelCase json tag (or is inlined), and no
// int, uint or float (their size differs between clients: int32 or int64, and
// resource.Quantity or a string for fractions); each root type with a status has the status
// subresource.
func TestAPIConventions(t *testing.T) {
	files, err := filepath.Glob("*_types.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no *_types.go files: %v", err)
	}
	fset := token.NewFileSet()
	fields := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				checkStatusSubresource(t, fset, ts, st, gd.Doc)
				for _, fl := range st.Fields.List {
					fields++
					checkField(t, fset, ts.Name.Name, fl)
				}
			}
		}
	}
	t.Logf("%d fields of %d files checked", fields, len(files))
}

func checkField(t *testing.T, fset *token.FileSet, typeName string, fl *ast.Field) {
	t.Helper()
	at := fset.Position(fl.Pos())
	tag := ""
	if fl.Tag != nil {
		tag = reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("json")
	}
	jsonName := strings.Split(tag, ",")[0]
	if len(fl.Names) == 0 { // embedded: TypeMeta inlined, ObjectMeta or ListMeta as metadata
		if jsonName != "" && jsonName != "metadata" && !strings.Contains(tag, "inline") {
			t.Errorf("%s: embedded field of %s has json name %q: embed inline or name the field", at, typeName, jsonName)
		}
		return
	}
	field := fl.Names[0].Name
	if !fl.Names[0].IsExported() {
		return
	}
	if fl.Doc == nil || strings.TrimSpace(fl.Doc.Text()) == "" {
		t.Errorf("%s: %s.%s has no doc comment (kubectl explain shows it)", at, typeName, field)
	}
	if jsonName == "" || jsonName == "-" {
		t.Errorf("%s: %s.%s has no json name", at, typeName, field)
	} else if !camelCase.MatchString(jsonName) {
		t.Errorf("%s: %s.%s: json name %q is not camelCase", at, typeName, field, jsonName)
	}
	ast.Inspect(fl.Type, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			switch id.Name {
			case "int", "uint", "float32", "float64":
				t.Errorf("%s: %s.%s is of type %s: use int32 or int64 (a quantity or a string for fractions)", at, typeName, field, id.Name)
			}
		}
		return true
	})
}

// checkStatusSubresource: a root type (with ObjectMeta) that has a Status field serves it as
// the status subresource, so that spec and status are written apart.
func checkStatusSubresource(t *testing.T, fset *token.FileSet, ts *ast.TypeSpec, st *ast.StructType, doc *ast.CommentGroup) {
	t.Helper()
	root, status := false, false
	for _, fl := range st.Fields.List {
		if sel, ok := fl.Type.(*ast.SelectorExpr); ok && len(fl.Names) == 0 && sel.Sel.Name == "ObjectMeta" {
			root = true
		}
		for _, n := range fl.Names {
			status = status || n.Name == "Status"
		}
	}
	text := ""
	if doc != nil {
		text = doc.Text()
	}
	if ts.Doc != nil {
		text += ts.Doc.Text()
	}
	if root && status && !strings.Contains(text, "+kubebuilder:subresource:status") {
		t.Errorf("%s: %s has a status but no +kubebuilder:subresource:status", fset.Position(ts.Pos()), ts.Name.Name)
	}
}
