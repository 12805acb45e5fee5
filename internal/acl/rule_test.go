package acl

import "testing"

func TestCheckRule(t *testing.T) {
	for _, ok := range []string{"~app:*", "+@read", "-@dangerous", "&chan", "%R~ro:*", "+cluster|slots", "allkeys", "resetkeys"} {
		if err := CheckRule(ok); err != nil {
			t.Errorf("CheckRule(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "NOPASS", "nopass", "On", "OFF", "ReSeT", "RESETPASS", ">secret", "<secret", "#abc", "!abc",
		`~app:"x`, "~app:'x", "~a b", "+get\t", "~a\nb", "~é"} {
		if err := CheckRule(bad); err == nil {
			t.Errorf("CheckRule(%q) = nil, want an error", bad)
		}
	}
}

func TestSafeLine(t *testing.T) {
	good := User{Name: "app", On: true, Hashes: []string{Hash("pw")}, Rules: []string{"~app:*", "+@read"}}.Line()
	if !SafeLine(good) {
		t.Errorf("SafeLine(%q) = false", good)
	}
	for _, bad := range []string{`user app reset on ~app:"x +@read`, "user app reset on nopass ~*", "user app reset NOPASS ~*", "user app reset >pw"} {
		if SafeLine(bad) {
			t.Errorf("SafeLine(%q) = true, want false", bad)
		}
	}
}
