package round

import (
	"fmt"
	"strings"
	"testing"
)

// INFO keyspace lists the databases that hold keys; a server of Valkey 9 with
// cluster-databases has others than 0.
func TestParseKeyspace(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       string
	}{
		{"no key", "# Keyspace\n", "[]"},
		{"database 0, Valkey 8", "# Keyspace\ndb0:keys=3,expires=1,avg_ttl=100\n", "[{0 3}]"},
		{"databases 0 and 5, Valkey 9", "# Keyspace\ndb5:keys=2,expires=0,avg_ttl=0,keys_with_volatile_items=0\ndb0:keys=7,expires=0,avg_ttl=0,keys_with_volatile_items=0\n", "[{0 7} {5 2}]"},
		{"a database emptied meanwhile", "# Keyspace\ndb2:keys=0,expires=0,avg_ttl=0\n", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKeyspace(strings.ReplaceAll(tc.info, "\n", "\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprint(got); s != tc.want && !(tc.want == "[]" && len(got) == 0) {
				t.Fatalf("parseKeyspace = %s, want %s", s, tc.want)
			}
		})
	}
	for _, bad := range []string{"dbx:keys=1", "db1:keys=many", "db1:expires=1"} {
		if _, err := parseKeyspace(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}
