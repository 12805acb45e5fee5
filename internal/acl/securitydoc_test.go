package acl

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOperatorGrantsAreTheDocumentedOnes: docs/security.md lists the operator's user's grants
// with the reason for each, in a table whose first column names them; the table and
// OperatorRules hold the same grants.
func TestOperatorGrantsAreTheDocumentedOnes(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "The operator's own Valkey user")
	if start < 0 {
		t.Fatal("docs/security.md has no section on the operator's own Valkey user")
	}
	grant := regexp.MustCompile("`([^`]+)`")
	var documented []string
	for _, line := range strings.Split(doc[start:], "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| `") {
			if len(documented) > 0 && !strings.HasPrefix(line, "|") {
				break // the end of the table
			}
			continue
		}
		first := strings.SplitN(strings.ReplaceAll(line, `\|`, "\x00"), "|", 3)[1]
		for _, m := range grant.FindAllStringSubmatch(first, -1) {
			documented = append(documented, strings.ReplaceAll(m[1], "\x00", "|"))
		}
	}
	want := slices.Clone(OperatorRules)
	slices.Sort(want)
	slices.Sort(documented)
	if !slices.Equal(want, documented) {
		t.Fatalf("docs/security.md documents the operator's grants\n  %v\nbut acl.OperatorRules are\n  %v", documented, want)
	}
}
