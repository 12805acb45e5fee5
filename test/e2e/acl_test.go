package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// appRules let a cluster-aware client discover the slots and use app:* keys only.
var appRules = []string{"~app:*", "+@read", "+@write", "+@connection", "+cluster|slots", "+cluster|shards", "+cluster|nodes"}

func passwordSecret(ns, name, pw string) {
	ExpectWithOffset(1, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{valkeyv1.DefaultPasswordKey: []byte(pw)}})).To(Succeed())
}

func appUser(secrets ...string) valkeyv1.UserSpec {
	u := valkeyv1.UserSpec{Name: "app", Rules: appRules}
	for _, s := range secrets {
		u.PasswordSecrets = append(u.PasswordSecrets, valkeyv1.SecretKeyRef{Name: s, Key: valkeyv1.DefaultPasswordKey})
	}
	return u
}

// userClient is a cluster client of the cluster's pods as user.
func userClient(c *valkeyv1.ValkeyCluster, user, pw string) (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{InitAddress: podAddrs(c), Username: user, Password: pw,
		DisableCache: true, ConnWriteTimeout: 5 * time.Second})
}

// waitUsersApplied waits for UsersApplied=True at the cluster's current generation.
func waitUsersApplied(c *valkeyv1.ValkeyCluster) {
	EventuallyWithOffset(1, func(g Gomega) {
		cur := getCluster(c)
		cond := status.Get(cur.Status.Conditions, valkeyv1.ConditionUsersApplied)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.ObservedGeneration).To(Equal(cur.Generation))
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

func isAuthErr(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH"))
}

var _ = Describe("ACL users", Label("acl"), Ordered, func() {
	var cluster *valkeyv1.ValkeyCluster

	BeforeAll(func() {
		ns := newNamespace("e2e-acl")
		passwordSecret(ns, "app-old", "app-old-password")
		passwordSecret(ns, "app-new", "app-new-password")
		cluster = newCluster(ns, "acl", 2, 1, nil)
		waitReady(cluster, 5*time.Minute)
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Users = []valkeyv1.UserSpec{appUser("app-old")} })
		waitUsersApplied(cluster)
	})

	It("lets a user limited to app:* write app:1 and refuses other:1", func() {
		vc, err := userClient(cluster, "app", "app-old-password")
		Expect(err).NotTo(HaveOccurred())
		defer vc.Close()
		Expect(vc.Do(ctx, vc.B().Set().Key("app:1").Value("v").Build()).Error()).To(Succeed())
		Expect(vc.Do(ctx, vc.B().Get().Key("app:1").Build()).ToString()).To(Equal("v"))
		err = vc.Do(ctx, vc.B().Set().Key("other:1").Value("v").Build()).Error()
		Expect(err).To(MatchError(ContainSubstring("NOPERM")))
		_, err = userClient(cluster, "default", password(cluster))
		Expect(isAuthErr(err)).To(BeTrue(), "the default user is off with spec.users: %v", err)
	})

	It("rotates the password under continuous client traffic with 0 authentication errors", func() {
		var mu sync.Mutex
		current := "app-old-password"
		authErrs, writes, writesNew := 0, 0, 0
		var other []string
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		// One client every 20 ms: the pace of a steady client, not a wait for a state.
		pace := time.NewTicker(20 * time.Millisecond)
		defer pace.Stop()
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for wctx.Err() == nil {
				<-pace.C
				mu.Lock()
				pw := current
				mu.Unlock()
				// A new client each time: every write authenticates.
				vc, err := userClient(cluster, "app", pw)
				if err == nil {
					err = vc.Do(wctx, vc.B().Set().Key("app:rotation").Value(pw).Build()).Error()
					vc.Close()
				}
				mu.Lock()
				switch {
				case isAuthErr(err):
					authErrs++
				case err != nil && !errors.Is(err, context.Canceled):
					other = append(other, err.Error())
				default:
					writes++
					if pw == "app-new-password" {
						writesNew++
					}
				}
				mu.Unlock()
			}
		}()
		By("1: adding the new password")
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Users = []valkeyv1.UserSpec{appUser("app-old", "app-new")} })
		waitUsersApplied(cluster)
		By("2: moving clients to the new password")
		mu.Lock()
		current = "app-new-password"
		mu.Unlock()
		// Moved: the client has written with the new password, so no connection it opened
		// with the old one is still authenticating.
		Eventually(func() int { mu.Lock(); defer mu.Unlock(); return writesNew }).WithTimeout(time.Minute).Should(BeNumerically(">", 0))
		By("3: removing the old password")
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Users = []valkeyv1.UserSpec{appUser("app-new")} })
		waitUsersApplied(cluster)
		cancel()
		<-done
		GinkgoWriter.Printf("rotation: %d writes, %d authentication errors, other errors %v\n", writes, authErrs, other)
		Expect(writes).To(BeNumerically(">", 10))
		Expect(authErrs).To(BeZero())
		_, err := userClient(cluster, "app", "app-old-password")
		Expect(isAuthErr(err)).To(BeTrue(), "the old password is refused: %v", err)
	})

	It("refuses a user removed from the spec", func() {
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Users = []valkeyv1.UserSpec{{Name: "other", Rules: []string{"~other:*", "+get"},
				PasswordSecrets: []valkeyv1.SecretKeyRef{{Name: "app-old", Key: valkeyv1.DefaultPasswordKey}}}}
		})
		waitUsersApplied(cluster)
		for _, n := range clusterNodes(cluster) {
			_, err := dialNodeAs(n.Status.Workload.PodIP, "app", "app-new-password")
			Expect(isAuthErr(err)).To(BeTrue(), "%s: %v", n.Name, err)
		}
	})
})

// dialNodeAs connects to the one Valkey server at a pod IP as user.
func dialNodeAs(podIP, user, pw string) (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{InitAddress: []string{podIP + ":6379"}, Username: user, Password: pw,
		ForceSingleClient: true, DisableCache: true})
}
