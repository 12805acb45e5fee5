package acl

import (
	"slices"
	"testing"
)

func TestUserLineAndSetUser(t *testing.T) {
	u := User{Name: "app", On: true, Hashes: []string{Hash("a"), Hash("b")}, Rules: []string{"~app:*", "+@write"}}
	want := "user app reset on #" + Hash("a") + " #" + Hash("b") + " ~app:* +@write"
	if got := u.Line(); got != want {
		t.Fatalf("Line() = %q, want %q", got, want)
	}
	if name, ok := ParseLine(want); !ok || name != "app" {
		t.Fatalf("ParseLine = %q %v", name, ok)
	}
	if _, ok := ParseLine("user app on nopass"); ok {
		t.Fatal("ParseLine accepted a line without reset")
	}
	args := u.SetUser()
	if !slices.Equal(args[:5], []string{"ACL", "SETUSER", "app", "reset", "on"}) {
		t.Fatalf("SetUser() = %v", args)
	}
	off := User{Name: "default"}
	if got := off.Line(); got != "user default reset off" {
		t.Fatalf("off Line() = %q", got)
	}
}

func TestParseListComparesPasswords(t *testing.T) {
	ls := ParseList([]string{
		"user app on #" + Hash("b") + " #" + Hash("a") + " ~app:* resetchannels -@all +@write",
		"user default on nopass sanitize-payload ~* &* +@all",
		"user old off resetchannels -@all",
	})
	app := User{Name: "app", On: true, Hashes: []string{Hash("a"), Hash("b")}}
	if !ls["app"].SameAuth(app) {
		t.Fatalf("app: %+v does not match %+v", ls["app"], app)
	}
	if ls["app"].Rest != "~app:* resetchannels -@all +@write" {
		t.Fatalf("app rest %q", ls["app"].Rest)
	}
	if ls["app"].SameAuth(User{Name: "app", On: true, Hashes: []string{Hash("a")}}) {
		t.Fatal("one password of two matched")
	}
	if ls["default"].SameAuth(User{Name: "default", On: true}) {
		t.Fatal("nopass matched a user with no password")
	}
	if !ls["old"].SameAuth(User{Name: "old"}) {
		t.Fatal("off user did not match")
	}
}
