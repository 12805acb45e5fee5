package valkeystart

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"valkey.io/operator/internal/acl"
	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/test/valkeyserver"
)

// TestAuthFileStartsTheServerWithTheUsers starts a real server as a cluster node's pod does:
// valkey-start writes the operator's user and the lines of the cluster's ACL file into the
// auth file. The operator's user is in, the users of the file have their rules, and the
// default user, which the file does not keep, is off.
func TestAuthFileStartsTheServerWithTheUsers(t *testing.T) {
	const opPassword, appPassword = "op \"secret\"", "app-secret"
	dir := t.TempDir()
	aclFile := writeACLFile(t, dir, acl.User{Name: "app", On: true, Hashes: []string{acl.Hash(appPassword)}, Rules: []string{"~app:*", "+@read", "+@write"}})
	addr := startWithAuth(t, dir, &Wrapper{User: "valkey-operator", Password: opPassword, ACLFile: aclFile})
	ctx := context.Background()

	eventually(t, 10*time.Second, "the operator's user is in", func() bool {
		out, err := strAs(ctx, addr, "valkey-operator", opPassword, "CLUSTER", "MYID")
		return err == nil && out != ""
	})
	if _, err := strAs(ctx, addr, "valkey-operator", opPassword, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatal(err)
	}
	if _, err := strOnce(ctx, addr, "", "PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("the default user answered without a password: %v", err)
	}
	_, err := strAs(ctx, addr, "valkey-operator", opPassword, "GET", "app:1")
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("the operator's user GET: %v, want NOPERM (it reads no data)", err)
	}
	var out string
	eventually(t, 10*time.Second, "the cluster serves the slots", func() bool {
		out, err = strAs(ctx, addr, "app", appPassword, "SET", "app:1", "x")
		return err == nil || !strings.Contains(err.Error(), "CLUSTERDOWN")
	})
	if err != nil || out != "OK" {
		t.Fatalf("app SET app:1: %q, %v", out, err)
	}
	if _, err := strAs(ctx, addr, "app", appPassword, "SET", "other:1", "x"); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("app SET other:1: %v, want NOPERM", err)
	}
}

// TestUsersConfigKeepsTheListedDefaultUser: a default user listed in the ACL file is kept
// as listed, once.
func TestUsersConfigKeepsTheListedDefaultUser(t *testing.T) {
	def := acl.User{Name: "default", On: true, Hashes: []string{acl.Hash("pw")}, Rules: acl.DefaultRules}
	conf := UsersConfig("valkey-operator", "op", def.Line()+"\nuser valkey-operator reset on nopass +@all\n# comment\n", 9, false)
	if strings.Count(conf, "user default ") != 1 || !strings.Contains(conf, def.Line()) {
		t.Fatalf("default user not kept once:\n%s", conf)
	}
	if strings.Contains(conf, "nopass") {
		t.Fatalf("a line for the operator's user was copied:\n%s", conf)
	}
	if strings.Contains(conf, "requirepass") {
		t.Fatalf("requirepass on a node with users:\n%s", conf)
	}
}

// writeACLFile writes the users as the cluster's ACL file (users.acl in dir) and returns its
// path.
func writeACLFile(t testing.TB, dir string, users ...acl.User) string {
	t.Helper()
	var lines strings.Builder
	for _, u := range users {
		lines.WriteString(u.Line() + "\n")
	}
	path := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startWithAuth runs w (its User, Password, ACLFile) on a config rendered with the auth
// file, on a free loopback port, and returns the server's address.
func startWithAuth(t testing.TB, dir string, w *Wrapper) string {
	t.Helper()
	bin, err := valkeyserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	w.AuthFile = filepath.Join(dir, "auth.conf")
	rendered, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, AuthFile: w.AuthFile})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "valkey.conf")
	lines := []string{rendered, "bind 127.0.0.1", "port " + strconv.Itoa(port),
		"cluster-port " + strconv.Itoa(port+10000), "logfile " + filepath.Join(dir, "server.log")}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	w.DataDir, w.Addr, w.DialTimeout = dir, "127.0.0.1:"+strconv.Itoa(port), time.Second
	w.Log, w.Signals = log.New(&syncBuffer{}, "", 0), sigs
	exit := make(chan int, 1)
	go func() { exit <- w.Run(context.Background(), []string{bin, conf}) }()
	t.Cleanup(func() {
		sigs <- syscall.SIGKILL
		<-exit
	})
	return w.Addr
}

// strAs runs one command on a new connection as user.
func strAs(ctx context.Context, addr, user, password string, args ...string) (string, error) {
	s, err := dial(addr, user, password, time.Second, nil)
	if err != nil {
		return "", err
	}
	defer s.close()
	return s.str(ctx, args...)
}

// TestAuthFileLeavesOutLinesTheServerCannotRead: a cluster's ACL file written before quotes
// and password rules were refused may hold a line the server cannot read back (valkey-server
// 9.1.2: "Unbalanced quotes in configuration line", exit at start). valkey-start leaves such a
// line out, so the server starts with the other users, and the refused user cannot log in.
func TestAuthFileLeavesOutLinesTheServerCannotRead(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "users.acl")
	good := acl.User{Name: "app", On: true, Hashes: []string{acl.Hash("app-pw")}, Rules: []string{"~app:*", "+@all"}}
	lines := good.Line() + "\n" +
		"user quoted reset on #" + acl.Hash("q-pw") + " ~app:\"x +@read\n" +
		"user open reset on NOPASS ~* +@all\n"
	if err := os.WriteFile(aclFile, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startWithAuth(t, dir, &Wrapper{User: "valkey-operator", Password: "op", ACLFile: aclFile})
	ctx := context.Background()
	eventually(t, 10*time.Second, "the server started and app is in", func() bool {
		out, err := strAs(ctx, addr, "app", "app-pw", "PING")
		return err == nil && out == "PONG"
	})
	if _, err := strAs(ctx, addr, "quoted", "q-pw", "PING"); err == nil {
		t.Fatal("the user of the unreadable line was kept")
	}
	if _, err := strAs(ctx, addr, "open", "any password", "PING"); err == nil {
		t.Fatal("a NOPASS user lets anyone in")
	}
}

// TestConfigShowsNoPasswordOfTheOperator: a user granted CONFIG GET (as exporters often are)
// reads masterauth, and what it reads is the replication user's password, not the
// operator's: it does not log the reader in as the operator. The operator's user cannot
// receive the dataset (SYNC, PSYNC) and the replication user can run nothing else of the
// operator's (ACL, CONFIG, FLUSHALL).
func TestConfigShowsNoPasswordOfTheOperator(t *testing.T) {
	const opPassword = "op-secret"
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "users.acl")
	mon := acl.User{Name: "monitor", On: true, Hashes: []string{acl.Hash("mon-pw")}, Rules: []string{"+config|get", "+info"}}
	if err := os.WriteFile(aclFile, []byte(mon.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startWithAuth(t, dir, &Wrapper{User: "valkey-operator", Password: opPassword, ACLFile: aclFile})
	ctx := context.Background()
	eventually(t, 10*time.Second, "the operator's user is in", func() bool {
		out, err := strAs(ctx, addr, "valkey-operator", opPassword, "PING")
		return err == nil && out == "PONG"
	})
	s, err := dial(addr, "monitor", "mon-pw", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	shown, err := s.cl.Do(ctx, s.cl.B().Arbitrary("CONFIG", "GET", "masterauth").Build()).AsStrSlice()
	if err != nil || len(shown) != 2 || shown[1] == "" {
		t.Fatalf("monitor CONFIG GET masterauth: %q, %v", shown, err)
	}
	if shown[1] == opPassword {
		t.Fatal("CONFIG GET masterauth shows the operator's password")
	}
	if _, err := strAs(ctx, addr, "valkey-operator", shown[1], "PING"); err == nil {
		t.Fatal("masterauth logs in as the operator's user")
	}
	user, err := s.cl.Do(ctx, s.cl.B().Arbitrary("CONFIG", "GET", "masteruser").Build()).AsStrSlice()
	if err != nil || len(user) != 2 || user[1] != acl.ReplicationUser {
		t.Fatalf("masteruser: %q, %v; want %s", user, err, acl.ReplicationUser)
	}
	for _, c := range [][]string{{"SYNC"}, {"PSYNC", "?", "-1"}} {
		if _, err := strAs(ctx, addr, "valkey-operator", opPassword, c...); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("the operator's user %v: %v, want NOPERM (it receives no dataset)", c, err)
		}
	}
	// The server started without nodes.conf: its replication user is off (HoldsReplication)
	// until the topology controller switches it on.
	if _, err := strAs(ctx, addr, acl.ReplicationUser, shown[1], "PING"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("the replication user of a server started without nodes.conf: %v, want WRONGPASS (switched off)", err)
	}
	if _, err := strAs(ctx, addr, "valkey-operator", opPassword, "ACL", "SETUSER", acl.ReplicationUser, "on"); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"ACL", "LIST"}, {"CONFIG", "GET", "masterauth"}, {"FLUSHALL"}, {"GET", "k"}} {
		if _, err := strAs(ctx, addr, acl.ReplicationUser, shown[1], c...); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("the replication user %v: %v, want NOPERM", c, err)
		}
	}
}
