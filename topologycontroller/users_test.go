package topologycontroller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/acl"
	"valkey.io/operator/internal/status"
)

// userSecret creates a Secret with one password under key "password".
func userSecret(ns, name, password string) {
	ExpectWithOffset(1, k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{valkeyv1.DefaultPasswordKey: []byte(password)},
	})).To(Succeed())
}

// setUsers replaces spec.users.
func setUsers(ns, name string, users ...valkeyv1.UserSpec) {
	b, err := json.Marshal(map[string]any{"users": users})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	patchSpec(ns, name, string(b))
}

// user is a UserSpec with passwords from the named Secrets.
func user(name string, rules []string, secrets ...string) valkeyv1.UserSpec {
	u := valkeyv1.UserSpec{Name: name, Rules: rules}
	for _, s := range secrets {
		u.PasswordSecrets = append(u.PasswordSecrets, valkeyv1.SecretKeyRef{Name: s, Key: valkeyv1.DefaultPasswordKey})
	}
	return u
}

// as runs one command on the server at addr as user; the error of AUTH included.
func as(addr, user, password string, args ...string) (string, error) {
	c, err := dialAs(addr, user, password)
	if err != nil {
		return "", err
	}
	defer c.Close()
	out, err := c.Do(context.Background(), c.B().Arbitrary(args...).Build()).ToString()
	if valkey.IsValkeyNil(err) {
		return "", nil
	}
	return out, err
}

// everyServer checks f on every running server.
func everyServer(fw *fakeWorkload, check func(addr string) error) func() error {
	return func() error {
		for _, a := range fw.addrs() {
			if err := check(a); err != nil {
				return fmt.Errorf("%s: %w", a, err)
			}
		}
		return nil
	}
}

// appUserWorks: the user authenticates, may touch app:* keys (a MOVED reply is not a
// refusal) and is refused other:1.
func appUserWorks(user, password string) func(addr string) error {
	return func(addr string) error {
		if _, err := as(addr, user, password, "GET", "app:1"); err != nil && !strings.Contains(err.Error(), "MOVED") {
			return fmt.Errorf("GET app:1: %w", err)
		}
		if _, err := as(addr, user, password, "GET", "other:1"); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			return fmt.Errorf("GET other:1 answered %q, want NOPERM", fmt.Sprint(err))
		}
		return nil
	}
}

// refused: the user cannot authenticate with the password.
func refused(user, password string) func(addr string) error {
	return func(addr string) error {
		if _, err := as(addr, user, password, "PING"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			return fmt.Errorf("%s PING answered %q, want WRONGPASS", user, fmt.Sprint(err))
		}
		return nil
	}
}

// usersApplied is UsersApplied of the cluster for its current generation ("" before).
func usersApplied(ns, name string) func() string {
	return func() string {
		vc := getCluster(ns, name)
		c := status.Get(vc.Status.Conditions, valkeyv1.ConditionUsersApplied)
		if c == nil || c.ObservedGeneration != vc.Generation {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// dialAs connects to one server as user, sending nothing at connect that the user may not be
// granted (no CLIENT SETINFO).
func dialAs(addr, user, password string) (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Username: user, Password: password,
		ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true, DisableRetry: true, ClientSetInfo: valkey.DisableClientSetInfo,
		Dialer: net.Dialer{Timeout: time.Second}})
}

// noOperatorDenials checks that a server's ACL LOG holds no command refused to the
// operator's user: the controller sends nothing its user is not granted.
func noOperatorDenials(opPassword string) func(addr string) error {
	return func(addr string) error {
		c, err := dialAs(addr, valkeyv1.OperatorUser, opPassword)
		if err != nil {
			return err
		}
		defer c.Close()
		entries, err := c.Do(context.Background(), c.B().Arbitrary("ACL", "LOG").Build()).ToArray()
		if err != nil {
			return err
		}
		for _, e := range entries {
			fields, err := e.ToArray()
			if err != nil {
				return err
			}
			var entry []string
			for _, f := range fields {
				s, _ := f.ToString() // counts and ages are numbers
				entry = append(entry, s)
			}
			if slices.Contains(entry, valkeyv1.OperatorUser) {
				return fmt.Errorf("ACL LOG: %v", entry)
			}
		}
		return nil
	}
}

var appRules = []string{"~app:*", "+@read", "+@write", "+@connection"}

var _ = Describe("ACL users", func() {

	It("applies spec.users live on every node, a node added later included, switches the default user off, and removes a user no longer listed", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		userSecret(ns, "app-pw", "app-secret")
		newCluster(ns, "u", 2, 1)
		pw := clusterPassword(ns, "u")
		Eventually(clusterReady(ns, "u"), formTimeout).Should(Succeed())
		Expect(as(f.addrs()[0], "default", pw, "PING")).To(Equal("PONG"), "without spec.users the default user keeps the cluster's password")

		setUsers(ns, "u", user("app", appRules, "app-pw"))
		Eventually(usersApplied(ns, "u"), 30*time.Second).Should(Equal("True/UsersApplied"))
		Expect(everyServer(f, appUserWorks("app", "app-secret"))()).To(Succeed())
		Expect(everyServer(f, refused("default", pw))()).To(Succeed(), "the default user is off unless listed")
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventUserApplied) }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("a node added later has the users")
		setShards(ns, "u", 3)
		Eventually(clusterReady(ns, "u"), formTimeout).Should(Succeed())
		Eventually(usersApplied(ns, "u"), 30*time.Second).Should(Equal("True/UsersApplied"))
		Expect(f.addrs()).To(HaveLen(6))
		Expect(everyServer(f, appUserWorks("app", "app-secret"))()).To(Succeed())

		By("a restarted node starts with the users (from the ACL Secret)")
		var acl corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.ACLSecretName("u")}, &acl)).To(Succeed())
		Expect(string(acl.Data[valkeyv1.ACLFileKey])).To(And(ContainSubstring("user app reset on #"), ContainSubstring("user default reset off"),
			Not(ContainSubstring("app-secret"))))

		By("a user removed from the spec can no longer authenticate")
		setUsers(ns, "u", user("other", []string{"~other:*", "+get"}, "app-pw"))
		Eventually(usersApplied(ns, "u"), 30*time.Second).Should(Equal("True/UsersApplied"))
		Eventually(everyServer(f, refused("app", "app-secret")), 10*time.Second).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventUserRemoved) }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("the controller sent no server a command its user is not granted")
		var op corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("u")}, &op)).To(Succeed())
		Expect(everyServer(f, noOperatorDenials(string(op.Data[valkeyv1.DefaultPasswordKey])))()).To(Succeed())
	})

	It("removes a password added by hand to the operator's own users from every server", func() {
		ns := newNamespace()
		f, _ := formCluster(ns, "planted", 1, 1)
		var op corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("planted")}, &op)).To(Succeed())
		opPassword := string(op.Data[valkeyv1.DefaultPasswordKey])

		By("a client granted +acl adds a password of its own to each of the operator's users")
		own := []string{valkeyv1.OperatorUser, "valkey-replication", "valkey-metrics"}
		for _, addr := range f.addrs() {
			for _, name := range own {
				Expect(as(addr, valkeyv1.OperatorUser, opPassword, "ACL", "SETUSER", name, ">backdoor")).To(Equal("OK"))
			}
			Expect(as(addr, valkeyv1.OperatorUser, "backdoor", "PING")).To(Equal("PONG"), "the planted password works at first")
		}

		By("the next rounds take it away, and keep the operator's")
		for _, name := range own {
			Eventually(everyServer(f, refused(name, "backdoor")), 30*time.Second).Should(Succeed(), "%s no longer takes the planted password", name)
		}
		Expect(everyServer(f, func(addr string) error {
			_, err := as(addr, valkeyv1.OperatorUser, opPassword, "PING")
			return err
		})()).To(Succeed(), "the operator's own password still works")
		Eventually(clusterReady(ns, "planted"), formTimeout).Should(Succeed())
	})

	It("rotates a user's password under continuous AUTH with either listed password: none refused", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		userSecret(ns, "old", "old-password")
		userSecret(ns, "new", "new-password")
		newCluster(ns, "r", 2, 1)
		Eventually(clusterReady(ns, "r"), formTimeout).Should(Succeed())
		setUsers(ns, "r", user("app", appRules, "old"))
		Eventually(usersApplied(ns, "r"), 30*time.Second).Should(Equal("True/UsersApplied"))

		// Clients follow the documented steps: the old password until the new one is
		// applied (UsersApplied=True for the spec that adds it), then the new one.
		var current atomic.Value
		current.Store("old-password")
		var attempts, failures atomic.Int64
		var mu sync.Mutex
		var errs []string
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, addr := range f.addrs() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					attempts.Add(1)
					if _, err := as(addr, "app", current.Load().(string), "PING"); err != nil {
						failures.Add(1)
						mu.Lock()
						errs = append(errs, err.Error())
						mu.Unlock()
					}
				}
			}()
		}
		By("1: adding the new password")
		setUsers(ns, "r", user("app", appRules, "old", "new"))
		Eventually(usersApplied(ns, "r"), 30*time.Second).Should(Equal("True/UsersApplied"))
		Expect(everyServer(f, func(a string) error { _, err := as(a, "app", "old-password", "PING"); return err })()).To(Succeed())
		By("2: clients move to the new password")
		current.Store("new-password")
		By("3: removing the old password")
		setUsers(ns, "r", user("app", appRules, "new"))
		Eventually(usersApplied(ns, "r"), 30*time.Second).Should(Equal("True/UsersApplied"))
		Eventually(everyServer(f, refused("app", "old-password")), 10*time.Second).Should(Succeed())
		close(stop)
		wg.Wait()
		GinkgoWriter.Printf("rotation: %d AUTH attempts, %d refused\n", attempts.Load(), failures.Load())
		Expect(attempts.Load()).To(BeNumerically(">", 100))
		Expect(failures.Load()).To(BeZero(), "%v", errs)
	})

	It("reports a user Secret without its key and rules Valkey refuses, applies the other users, and changes nothing running for those users", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		userSecret(ns, "app-pw", "app-secret")
		newCluster(ns, "bad", 2, 1)
		Eventually(clusterReady(ns, "bad"), formTimeout).Should(Succeed())
		setUsers(ns, "bad", user("app", appRules, "app-pw"))
		Eventually(usersApplied(ns, "bad"), 30*time.Second).Should(Equal("True/UsersApplied"))
		ids := nodeIDs(ns)

		By("a Secret without its key")
		Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nokey"},
			Data: map[string][]byte{"other": []byte("x")}})).To(Succeed())
		setUsers(ns, "bad", user("app", []string{"~app:*", "+get"}, "nokey"), user("ops", []string{"~*", "+info"}, "app-pw"))
		Eventually(usersApplied(ns, "bad"), 30*time.Second).Should(Equal("False/" + valkeyv1.ReasonUserSecretMissing))
		Expect(clusterCondition(ns, "bad", valkeyv1.ConditionUsersApplied)()).To(Equal("False/UserSecretMissing"))
		msg := status.Get(getCluster(ns, "bad").Status.Conditions, valkeyv1.ConditionUsersApplied).Message
		Expect(msg).To(And(ContainSubstring("user app"), ContainSubstring("nokey"), ContainSubstring(`"password"`)))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonUserSecretMissing) }, 10*time.Second).Should(BeNumerically(">=", 1))
		Eventually(everyServer(f, func(a string) error { _, err := as(a, "ops", "app-secret", "INFO", "server"); return err }), 10*time.Second).
			Should(Succeed(), "the other users are applied")
		Consistently(everyServer(f, appUserWorks("app", "app-secret")), 3*time.Second, 500*time.Millisecond).
			Should(Succeed(), "the user whose Secret lacks its key is left as it was")

		By("rules Valkey refuses")
		setUsers(ns, "bad", user("app", appRules, "app-pw"), user("broken", []string{"~x:*", "+nosuchcommand"}, "app-pw"))
		Eventually(usersApplied(ns, "bad"), 30*time.Second).Should(Equal("False/" + valkeyv1.ReasonACLRuleRefused))
		msg = status.Get(getCluster(ns, "bad").Status.Conditions, valkeyv1.ConditionUsersApplied).Message
		Expect(msg).To(And(ContainSubstring("user broken"), ContainSubstring("nosuchcommand")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonACLRuleRefused) }, 10*time.Second).Should(BeNumerically(">=", 1))
		Expect(everyServer(f, refused("broken", "app-secret"))()).To(Succeed())
		Eventually(everyServer(f, refused("ops", "app-secret")), 10*time.Second).Should(Succeed(), "ops left the spec")
		Expect(everyServer(f, appUserWorks("app", "app-secret"))()).To(Succeed())
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.ACLSecretName("bad")}, &corev1.Secret{})).To(Succeed())
		var acl corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.ACLSecretName("bad")}, &acl)).To(Succeed())
		Expect(string(acl.Data[valkeyv1.ACLFileKey])).NotTo(ContainSubstring("broken"), "a line no server accepts would stop servers from starting")
		Expect(nodeIDs(ns)).To(Equal(ids))
		Expect(clusterReady(ns, "bad")()).To(Succeed())

		By("fixed rules are applied")
		setUsers(ns, "bad", user("app", appRules, "app-pw"), user("broken", []string{"~x:*", "+get"}, "app-pw"))
		Eventually(usersApplied(ns, "bad"), 30*time.Second).Should(Equal("True/UsersApplied"))
	})

	It("replaces the default user's password live, and reports PasswordRejected only when neither the operator's nor the default password is known", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "pw", 2, 1)
		old := clusterPassword(ns, "pw")
		Eventually(clusterReady(ns, "pw"), formTimeout).Should(Succeed())
		ids := nodeIDs(ns)
		addrs := f.addrs()

		key := client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("pw")}
		var s corev1.Secret
		Expect(k8s.Get(context.Background(), key, &s)).To(Succeed())
		s.Data[valkeyv1.DefaultPasswordKey] = []byte("a-new-password")
		Expect(k8s.Update(context.Background(), &s)).To(Succeed())
		Eventually(everyServer(f, func(a string) error { _, err := as(a, "default", "a-new-password", "PING"); return err }), 30*time.Second).Should(Succeed())
		Expect(everyServer(f, refused("default", old))()).To(Succeed())
		Expect(f.addrs()).To(ConsistOf(addrs), "no server restarted")
		Expect(nodeIDs(ns)).To(Equal(ids))

		By("neither password known")
		opKey := client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("pw")}
		var op corev1.Secret
		Expect(k8s.Get(context.Background(), opKey, &op)).To(Succeed())
		opPassword := op.Data[valkeyv1.DefaultPasswordKey]
		op.Data[valkeyv1.DefaultPasswordKey] = []byte("unknown-1")
		Expect(k8s.Update(context.Background(), &op)).To(Succeed())
		Expect(k8s.Get(context.Background(), key, &s)).To(Succeed())
		s.Data[valkeyv1.DefaultPasswordKey] = []byte("unknown-2")
		Expect(k8s.Update(context.Background(), &s)).To(Succeed())
		Eventually(clusterCondition(ns, "pw", valkeyv1.ConditionReady), 30*time.Second).Should(Equal("False/" + valkeyv1.ReasonPasswordRejected))
		Consistently(everyServer(f, func(a string) error { _, err := as(a, "default", "a-new-password", "PING"); return err }),
			3*time.Second, 500*time.Millisecond).Should(Succeed(), "nothing is changed in Valkey")

		op.Data[valkeyv1.DefaultPasswordKey] = opPassword
		Expect(k8s.Update(context.Background(), &op)).To(Succeed())
		Eventually(clusterReady(ns, "pw"), 30*time.Second).Should(Succeed())
	})

	It("upgrades servers started with requirepass only: creates the operator's user live, then authenticates as it", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		f.legacy = true
		DeferCleanup(f.stop)
		newCluster(ns, "up", 2, 1)
		pw := clusterPassword(ns, "up")
		Eventually(clusterReady(ns, "up"), formTimeout).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventOperatorUserCreated) }, 10*time.Second).Should(BeNumerically(">=", 1))
		var op corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("up")}, &op)).To(Succeed())
		opPassword := string(op.Data[valkeyv1.DefaultPasswordKey])
		Expect(everyServer(f, func(a string) error {
			_, err := as(a, valkeyv1.OperatorUser, opPassword, "CLUSTER", "MYID")
			return err
		})()).To(Succeed())
		By("the metrics user too, live: it reads INFO and CLUSTER INFO, no key")
		Eventually(everyServer(f, func(a string) error {
			if _, err := as(a, acl.MetricsUser, acl.MetricsPassword(opPassword), "CLUSTER", "INFO"); err != nil {
				return err
			}
			if _, err := as(a, acl.MetricsUser, acl.MetricsPassword(opPassword), "GET", "k"); err == nil || !strings.Contains(err.Error(), "NOPERM") {
				return fmt.Errorf("the metrics user GET answered %q, want NOPERM", fmt.Sprint(err))
			}
			return nil
		}), 20*time.Second).Should(Succeed())
		Expect(checkHealthy(f, pw, 2, 1)).To(Succeed(), "clients of the default user are unchanged")
	})

	It("keeps the operator's user's replication grants while a server still replicates as it, and takes them once none does", func() {
		ns := newNamespace()
		f, _ := formCluster(ns, "rp", 1, 1)
		var op corev1.Secret
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("rp")}, &op)).To(Succeed())
		opPassword := string(op.Data[valkeyv1.DefaultPasswordKey])
		mayPsync := func(want bool) func() error {
			return everyServer(f, func(a string) error {
				out, err := as(a, valkeyv1.OperatorUser, opPassword, "ACL", "DRYRUN", valkeyv1.OperatorUser, "PSYNC", "?", "-1")
				if err != nil {
					return err
				}
				if (out == "OK") != want {
					return fmt.Errorf("the operator's user may PSYNC: %q, want %v", out, want)
				}
				return nil
			})
		}
		Eventually(mayPsync(false), 20*time.Second).Should(Succeed(), "servers replicate as valkey-replication: the operator's user receives no dataset")

		By("a server replicating as the operator's user, as an earlier valkey-start made it")
		old := f.server(valkeyv1.NodeName("rp", 0, 1)).Addr()
		_, err := as(old, valkeyv1.OperatorUser, opPassword, "CONFIG", "SET", "masteruser", valkeyv1.OperatorUser)
		Expect(err).NotTo(HaveOccurred())
		Eventually(mayPsync(true), 20*time.Second).Should(Succeed(), "its replication keeps working until it is rolled")

		By("rolled: it replicates as valkey-replication again")
		_, err = as(old, valkeyv1.OperatorUser, opPassword, "CONFIG", "SET", "masteruser", "valkey-replication")
		Expect(err).NotTo(HaveOccurred())
		Eventually(mayPsync(false), 20*time.Second).Should(Succeed())
	})
})
