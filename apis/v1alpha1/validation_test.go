package v1alpha1_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The seed design's example, verbatim.
const seedCluster = `
apiVersion: valkey.io/v1alpha1
kind: ValkeyCluster
metadata: {name: my-cluster}
spec:
  shards: 3
  replicas: 1
  persistence: {size: 10Gi, storageClassName: gp3}
`

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "api-" + rand.String(6)}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func fromYAML(doc, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	u.SetNamespace(ns)
	return u
}

// expectRejected asserts the API server refuses err with a message holding each of
// messages (the field, the key...).
func expectRejected(err error, messages ...string) {
	ExpectWithOffset(1, err).To(HaveOccurred(), "expected the API server to refuse the change")
	for _, m := range messages {
		ExpectWithOffset(1, err.Error()).To(ContainSubstring(m))
	}
}

// badConfigs are spec.configs the workload controller cannot render (internal/valkeyconf),
// each with what the refusal must say besides the field: the key, and why.
var badConfigs = []struct {
	config  map[string]string
	message string
}{
	{map[string]string{"dir": "/tmp"}, `key "dir" is set by the operator itself`},
	{map[string]string{"include": "/etc/passwd"}, `key "include" is set by the operator itself`},
	{map[string]string{"Rename-Command": "FLUSHALL x"}, `key "Rename-Command" is set by the operator itself`},
	{map[string]string{"SAVE": ""}, `key "SAVE" is set by the operator itself`},
	{map[string]string{"cluster-announce-ip": "10.0.0.1"}, `key "cluster-announce-ip" is set by the operator itself`},
	{map[string]string{"unixsocket": "/tmp/s"}, `key "unixsocket" is set by the operator itself`},
	{map[string]string{"maxmemory": "1gb", "Maxmemory": "2gb"}, `and another spelling of it name one directive`},
	{map[string]string{"maxmemory-policy": "allkeys-lru\tx"}, `the value of "maxmemory-policy" contains a tab, newline, carriage return`},
	{map[string]string{"maxmemory-policy": "allkeys-lru\ndir /tmp"}, `the value of "maxmemory-policy" contains a tab, newline, carriage return`},
	{map[string]string{"notify-keyspace-events": "Ex\r"}, `the value of "notify-keyspace-events" contains a tab, newline, carriage return`},
	{map[string]string{"maxclients": "10"}, `key "maxclients" must be a whole number of at least 64`},
	{map[string]string{"MaxClients": "lots"}, `key "MaxClients" must be a whole number of at least 64`},
	{map[string]string{"maxmemory-policy": strings.Repeat("x", 4097)}, "spec.config.maxmemory-policy: Too long"},
}

// goodConfig is a spec.config the workload controller renders.
var goodConfig = map[string]string{
	"maxmemory": "1gb", "MaxMemory-Policy": "allkeys-lru", "maxclients": " 10000 ", "notify-keyspace-events": "Ex",
	"hash-max-listpack-entries": "512", "cluster-node-timeout": "5000", "repl-backlog-size": "64mb", "lua-time-limit": "5000",
}

func persistentCluster(ns string) *valkeyv1.ValkeyCluster {
	return &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c-" + rand.String(5), Namespace: ns},
		Spec: valkeyv1.ValkeyClusterSpec{
			Shards: 3, Replicas: 1,
			ServerSpec: valkeyv1.ServerSpec{
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("10Gi"), StorageClassName: ptr.To("gp3")},
			},
		},
	}
}

var _ = Describe("ValkeyCluster admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("accepts the seed YAML verbatim and fills the defaults", func() {
		Expect(k8s.Create(ctx, fromYAML(seedCluster, ns))).To(Succeed())
		var c valkeyv1.ValkeyCluster
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster"}, &c)).To(Succeed())
		Expect(c.Spec.Shards).To(Equal(int32(3)))
		Expect(c.Spec.Replicas).To(Equal(int32(1)))
		Expect(c.Spec.Persistence.Size.String()).To(Equal("10Gi"))
		Expect(*c.Spec.Persistence.StorageClassName).To(Equal("gp3"))
		Expect(c.Spec.Persistence.ReclaimPolicy).To(Equal(valkeyv1.ReclaimRetain))
		Expect(c.Spec.WorkloadType).To(Equal(valkeyv1.WorkloadStatefulSet))
		Expect(c.Spec.Image).NotTo(BeEmpty())
	})

	It("refuses shrinking the volume", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Persistence.Size = resource.MustParse("5Gi")
		expectRejected(k8s.Update(ctx, c), "persistence.size may only grow")
	})

	It("accepts growing the volume", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Persistence.Size = resource.MustParse("20Gi")
		Expect(k8s.Update(ctx, c)).To(Succeed())
	})

	It("accepts correcting the storage class (the volume controller refuses it for a bound claim)", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Persistence.StorageClassName = ptr.To("standard")
		Expect(k8s.Update(ctx, c)).To(Succeed())
		c.Spec.Persistence.StorageClassName = nil
		Expect(k8s.Update(ctx, c)).To(Succeed())
	})

	It("refuses removing persistence", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Persistence = nil
		expectRejected(k8s.Update(ctx, c), "persistence cannot be removed once set")
	})

	It("refuses persistence with a Deployment workload", func() {
		c := persistentCluster(ns)
		c.Spec.WorkloadType = valkeyv1.WorkloadDeployment
		expectRejected(k8s.Create(ctx, c), "persistence requires workloadType StatefulSet")
	})

	It("refuses zero shards", func() {
		u := fromYAML(strings.Replace(seedCluster, "shards: 3", "shards: 0", 1), ns)
		expectRejected(k8s.Create(ctx, u), "spec.shards")
	})

	It("refuses negative replicas", func() {
		u := fromYAML(strings.Replace(seedCluster, "replicas: 1", "replicas: -1", 1), ns)
		expectRejected(k8s.Create(ctx, u), "spec.replicas")
	})

	It("accepts autoGrow with its defaults, and refuses a threshold out of range, a bad increment and a maxSize below size, naming the field", func() {
		c := persistentCluster(ns)
		c.Spec.Persistence.AutoGrow = &valkeyv1.AutoGrowSpec{MaxSize: resource.MustParse("100Gi")}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(c.Spec.Persistence.AutoGrow.ThresholdPercent).To(BeEquivalentTo(valkeyv1.DefaultAutoGrowThreshold))
		Expect(c.Spec.Persistence.AutoGrow.Increment).To(Equal(valkeyv1.DefaultAutoGrowIncrement))
		for _, inc := range []string{"2Gi", "150%", "1%"} {
			c.Spec.Persistence.AutoGrow.Increment = inc
			Expect(k8s.Update(ctx, c)).To(Succeed(), inc)
		}
		for _, tc := range []struct {
			change func(*valkeyv1.AutoGrowSpec)
			says   string
		}{
			{func(a *valkeyv1.AutoGrowSpec) { a.ThresholdPercent = 5 }, "thresholdPercent"},
			{func(a *valkeyv1.AutoGrowSpec) { a.ThresholdPercent = 95 }, "thresholdPercent"},
			{func(a *valkeyv1.AutoGrowSpec) { a.Increment = "0%" }, "persistence.autoGrow.increment must be"},
			{func(a *valkeyv1.AutoGrowSpec) { a.Increment = "-1Gi" }, "persistence.autoGrow.increment must be"},
			{func(a *valkeyv1.AutoGrowSpec) { a.Increment = "lots" }, "persistence.autoGrow.increment must be"},
			{func(a *valkeyv1.AutoGrowSpec) { a.MaxSize = resource.MustParse("5Gi") }, "persistence.autoGrow.maxSize must be at least persistence.size"},
		} {
			cur := &valkeyv1.ValkeyCluster{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), cur)).To(Succeed())
			tc.change(cur.Spec.Persistence.AutoGrow)
			expectRejected(k8s.Update(ctx, cur), tc.says)
		}
	})

	It("refuses a size below 1Mi: zero, a fraction of a byte", func() {
		for _, size := range []string{"0", `"0.5"`, "1Ki"} {
			u := fromYAML(strings.Replace(seedCluster, "size: 10Gi", "size: "+size, 1), ns)
			expectRejected(k8s.Create(ctx, u), "persistence.size must be at least 1Mi")
		}
	})

	It("refuses names that Kubernetes would refuse, naming the field, before anything is made", func() {
		pw := []valkeyv1.SecretKeyRef{{Name: "app-pw"}}
		for _, tc := range []struct {
			change func(*valkeyv1.ValkeyCluster)
			says   string
		}{
			{func(c *valkeyv1.ValkeyCluster) { c.Name = "my.cache" }, "metadata.name must start with a letter"},
			{func(c *valkeyv1.ValkeyCluster) { c.Name = "9lives" }, "metadata.name must start with a letter"},
			{func(c *valkeyv1.ValkeyCluster) { c.Name = "x-nodes" }, "metadata.name may not end in -nodes"},
			{func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.StorageClassName = ptr.To("Fast_SSD") }, "spec.persistence.storageClassName"},
			{func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.StorageClassName = ptr.To("") }, "spec.persistence.storageClassName"},
			{func(c *valkeyv1.ValkeyCluster) { c.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "team/pw"} }, "spec.passwordSecret.name"},
			{func(c *valkeyv1.ValkeyCluster) {
				c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: []valkeyv1.SecretKeyRef{{Name: "Pw"}}}}
			}, "spec.users[0].passwordSecrets[0].name"},
			{func(c *valkeyv1.ValkeyCluster) {
				c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: append(pw, pw[0])}}
			}, "Duplicate value"},
			{func(c *valkeyv1.ValkeyCluster) { c.Spec.TLS = &valkeyv1.TLSSpec{SecretName: "My_Cert"} }, "spec.tls.secretName"},
			{func(c *valkeyv1.ValkeyCluster) { c.Spec.RestoreFrom = "Nightly/1" }, "spec.restoreFrom"},
		} {
			c := persistentCluster(ns)
			tc.change(c)
			expectRejected(k8s.Create(ctx, c), tc.says)
		}
		c := persistentCluster(ns)
		c.Name = "web-cache-2"
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: []valkeyv1.SecretKeyRef{{Name: "app-pw"}, {Name: "app-pw", Key: "next"}}}}
		Expect(k8s.Create(ctx, c)).To(Succeed(), "two keys of one Secret are two passwords")
	})

	It("refuses a size that is not a quantity", func() {
		u := fromYAML(strings.Replace(seedCluster, "size: 10Gi", "size: abc", 1), ns)
		expectRejected(k8s.Create(ctx, u), "spec.persistence.size")
	})

	It("accepts changing the password Secret of a running cluster", func() {
		d := persistentCluster(ns)
		d.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "mine"}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Expect(d.Spec.PasswordSecret.Key).To(Equal(valkeyv1.DefaultPasswordKey), "key defaulted")
		d.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "mine-2", Key: "other"}
		Expect(k8s.Update(ctx, d)).To(Succeed())
	})

	It("refuses tls with both or neither of secretName and generate", func() {
		c := persistentCluster(ns)
		c.Spec.TLS = &valkeyv1.TLSSpec{SecretName: "certs", Generate: true}
		expectRejected(k8s.Create(ctx, c), "tls: set exactly one of secretName and generate: true")
		c.Spec.TLS = &valkeyv1.TLSSpec{}
		expectRejected(k8s.Create(ctx, c), "tls: set exactly one of secretName and generate: true")
		c.Spec.TLS = &valkeyv1.TLSSpec{Generate: true, PlaintextPort: ptr.To[int32](6379)}
		expectRejected(k8s.Create(ctx, c), "tls.plaintextPort must differ")
	})

	It("refuses adding, removing or switching tls on a running cluster, and accepts a plaintext port beside it", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.TLS = &valkeyv1.TLSSpec{Generate: true}
		expectRejected(k8s.Update(ctx, c), "tls cannot be added or removed on an existing cluster")

		d := persistentCluster(ns)
		d.Spec.TLS = &valkeyv1.TLSSpec{SecretName: "certs"}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		d.Spec.TLS.PlaintextPort = ptr.To[int32](6380)
		Expect(k8s.Update(ctx, d)).To(Succeed())
		d.Spec.TLS = &valkeyv1.TLSSpec{SecretName: "other-certs"}
		expectRejected(k8s.Update(ctx, d), "tls.secretName cannot change")
		d.Spec.TLS = &valkeyv1.TLSSpec{Generate: true}
		expectRejected(k8s.Update(ctx, d), "tls.secretName cannot change")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.TLS = nil
		expectRejected(k8s.Update(ctx, d), "tls cannot be added or removed")
	})

	It("refuses user rules that set passwords or switch the user, and the operator's reserved name", func() {
		c := persistentCluster(ns)
		pw := []valkeyv1.SecretKeyRef{{Name: "app-pw"}}
		// Valkey reads these in any case: NOPASS lets anyone in as the user with any password.
		for _, rule := range []string{">secret", "<secret", "#abc", "!abc", "nopass", "on", "reset",
			"NOPASS", "Nopass", "ON", "Off", "RESET", "ResetPass"} {
			c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: pw, Rules: []string{"~app:*", rule}}}
			expectRejected(k8s.Create(ctx, c), "spec.users[0].rules[1]")
			expectRejected(k8s.Create(ctx, c), "users[].rules may not set passwords")
		}
		// One token each, which a server's config file can read back: a quote there stops
		// every restarted server from starting.
		for _, rule := range []string{"~app:* +@all", `~app:"x`, "~app:'x", "+get\t", "~café", ""} {
			c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: pw, Rules: []string{rule}}}
			expectRejected(k8s.Create(ctx, c), "spec.users[0].rules[0]")
		}
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: pw, Rules: []string{`~app:"x`}}}
		expectRejected(k8s.Create(ctx, c), "one rule per item, of printable ASCII without spaces or quotes")
		c.Spec.Users = []valkeyv1.UserSpec{{Name: valkeyv1.OperatorUser, PasswordSecrets: pw}}
		expectRejected(k8s.Create(ctx, c), "valkey-operator is reserved")
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "valkey-replication", PasswordSecrets: pw}}
		expectRejected(k8s.Create(ctx, c), "valkey-replication is reserved")
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "app"}}
		expectRejected(k8s.Create(ctx, c), "passwordSecrets")
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "app", PasswordSecrets: pw, Rules: []string{"~app:*", "+@read", "+@write"}}, {Name: "default", PasswordSecrets: pw}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("refuses tolerations the pod API would refuse, naming the field", func() {
		c := persistentCluster(ns)
		for _, t := range []struct {
			tol corev1.Toleration
			msg string
		}{
			{corev1.Toleration{Key: "k", Operator: "Is", Value: "v"}, "tolerations[].operator must be Exists or Equal"},
			{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Effect: "NoRun"}, "tolerations[].effect must be"},
			{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}, "tolerations[].value must be empty"},
			{corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "v"}, "tolerations[].key may be empty only"},
			{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)}, "tolerationSeconds is allowed only"},
		} {
			c.Spec.Scheduling = &valkeyv1.SchedulingSpec{Tolerations: []corev1.Toleration{t.tol}}
			expectRejected(k8s.Create(ctx, c), "spec.scheduling.tolerations[0]")
			expectRejected(k8s.Create(ctx, c), t.msg)
		}
		c.Spec.Scheduling.Tolerations = []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey", Effect: corev1.TaintEffectNoSchedule},
			{Operator: corev1.TolerationOpExists},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
		}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("refuses config values too long for a config file and keys that are not directive names", func() {
		c := persistentCluster(ns)
		c.Spec.Config = map[string]string{"maxmemory-policy": strings.Repeat("x", 4097)}
		expectRejected(k8s.Create(ctx, c), "spec.config.maxmemory-policy: Too long")
		for _, key := range []string{"max memory", "maxmemory\nbind", "-x", "a_b"} {
			c.Spec.Config = map[string]string{key: "1"}
			expectRejected(k8s.Create(ctx, c), "spec.config", "made of letters, digits and dashes")
		}
		c.Spec.Config = map[string]string{"maxmemory": "1gb", "MaxMemory-Policy": "allkeys-lru"}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("refuses every spec.config the workload controller would refuse, naming the field and the key, on create and on update", func() {
		running := persistentCluster(ns)
		running.Spec.Config = map[string]string{"maxmemory": "1gb"}
		Expect(k8s.Create(ctx, running)).To(Succeed())
		for _, tc := range badConfigs {
			c := persistentCluster(ns)
			c.Spec.Config = tc.config
			expectRejected(k8s.Create(ctx, c), "spec.config", tc.message)
			update := running.DeepCopy()
			update.Spec.Config = tc.config
			expectRejected(k8s.Update(ctx, update), "spec.config", tc.message)
		}
	})

	It("admits the configs the workload controller renders, on create and on update", func() {
		c := persistentCluster(ns)
		c.Spec.Config = goodConfig
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Config = map[string]string{"maxclients": "64", "cluster-announce": "x", "replica-announced": "yes", "appendonly-x": "1"}
		Expect(k8s.Update(ctx, c)).To(Succeed(), "names beside the owned ones are not owned (the server refuses those it does not know)")
	})

	It("accepts adding persistence to a running cluster", func() {
		c := persistentCluster(ns)
		c.Spec.Persistence = nil
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi")}
		Expect(k8s.Update(ctx, c)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		Expect(c.Spec.Persistence.ReclaimPolicy).To(Equal(valkeyv1.ReclaimRetain))
	})
})

var _ = Describe("ValkeyNode admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	node := func(name string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: valkeyv1.ValkeyNodeSpec{
				ClusterName: "my-cluster", Shard: 1, ReplicaIndex: 0,
				ServerSpec: valkeyv1.ServerSpec{
					Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("10Gi"), StorageClassName: ptr.To("gp3")},
				},
			},
		}
	}

	It("accepts a node with persistence and fills the defaults", func() {
		n := node(valkeyv1.NodeName("my-cluster", 1, 0))
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
		Expect(n.Spec.Persistence.ReclaimPolicy).To(Equal(valkeyv1.ReclaimRetain))
		Expect(n.Spec.WorkloadType).To(Equal(valkeyv1.WorkloadStatefulSet))
		Expect(n.Spec.Persistence.RDBEnabled()).To(BeTrue())
		Expect(n.Spec.Persistence.AOFEnabled()).To(BeFalse())
	})

	It("accepts spec.network on a node outside any cluster only", func() {
		n := node("alone-" + rand.String(5))
		n.Spec.ClusterName = ""
		n.Spec.Network = &valkeyv1.NetworkSpec{Policy: valkeyv1.NetworkPolicyDisabled}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		m := node("n-" + rand.String(5))
		m.Spec.ClusterName = "c"
		m.Spec.Network = &valkeyv1.NetworkSpec{}
		expectRejected(k8s.Create(ctx, m), "network is for a node outside any cluster")
	})

	It("accepts correcting the storage class of a node", func() {
		n := node("n-" + rand.String(5))
		Expect(k8s.Create(ctx, n)).To(Succeed())
		n.Spec.Persistence.StorageClassName = ptr.To("standard")
		Expect(k8s.Update(ctx, n)).To(Succeed())
	})

	It("refuses every spec.config the workload controller would refuse, naming the field and the key, and admits a good one", func() {
		for _, tc := range badConfigs {
			n := node("n-" + rand.String(5))
			n.Spec.Config = tc.config
			expectRejected(k8s.Create(ctx, n), "spec.config", tc.message)
		}
		n := node("n-" + rand.String(5))
		n.Spec.Config = goodConfig
		Expect(k8s.Create(ctx, n)).To(Succeed())
	})

	for _, tc := range []struct {
		change  func(*valkeyv1.ValkeyNode)
		message string
	}{
		{func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence.Size = resource.MustParse("5Gi") }, "persistence.size may only grow"},
		{func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence = nil }, "persistence cannot be removed once set"},
		{func(n *valkeyv1.ValkeyNode) { n.Spec.WorkloadType = valkeyv1.WorkloadDeployment }, "persistence requires workloadType StatefulSet"},
		{func(n *valkeyv1.ValkeyNode) { n.Spec.ClusterName = "other" }, "clusterName is immutable"},
	} {
		It(fmt.Sprintf("refuses an update: %s", tc.message), func() {
			n := node("n-" + rand.String(5))
			Expect(k8s.Create(ctx, n)).To(Succeed())
			tc.change(n)
			expectRejected(k8s.Update(ctx, n), tc.message)
		})
	}
})

var _ = Describe("Names that fit", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	cluster := func(nameLen int, shards, replicas int32) *valkeyv1.ValkeyCluster {
		return &valkeyv1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("c", nameLen), Namespace: ns},
			Spec:       valkeyv1.ValkeyClusterSpec{Shards: shards, Replicas: replicas},
		}
	}

	for _, tc := range []struct {
		shards, replicas int32
		message          string
	}{
		{3, 1, "metadata.name must be at most 41 characters for 3 shards and 1 replica (the StatefulSet name valkey-<name>-<shard>-<replica> must fit 52 characters)"},
		{1, 0, "metadata.name must be at most 41 characters for 1 shard and 0 replicas"},
		{11, 10, "metadata.name must be at most 39 characters for 11 shards and 10 replicas"},
		{1000, 2, "metadata.name must be at most 39 characters for 1000 shards and 2 replicas"},
	} {
		It(fmt.Sprintf("refuses a ValkeyCluster name one character too long for %d shards and %d replicas, and accepts the longest", tc.shards, tc.replicas), func() {
			longest := valkeyv1.MaxClusterNameLength(tc.shards, tc.replicas)
			expectRejected(k8s.Create(ctx, cluster(longest+1, tc.shards, tc.replicas)), tc.message)
			Expect(k8s.Create(ctx, cluster(longest, tc.shards, tc.replicas))).To(Succeed())
		})
	}

	// The highest shard index gains a digit from 10 to 11 shards (node <name>-10-<replica>).
	It("refuses a scale-out that adds a digit to the longest node name, with the same message", func() {
		c := cluster(valkeyv1.MaxClusterNameLength(10, 1), 10, 1)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.Shards = 11
		expectRejected(k8s.Update(ctx, c), "metadata.name must be at most 40 characters for 11 shards and 1 replica")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		c.Spec.Replicas = 0
		Expect(k8s.Update(ctx, c)).To(Succeed(), "changes that keep the digits stay allowed")
	})

	It("refuses a ValkeyNode name one character too long, and accepts the longest", func() {
		node := func(name string) *valkeyv1.ValkeyNode {
			return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		}
		expectRejected(k8s.Create(ctx, node(strings.Repeat("n", valkeyv1.MaxNodeNameLength+1))),
			"metadata.name must be at most 45 characters (the StatefulSet name valkey-<name> must fit 52 characters)")
		Expect(k8s.Create(ctx, node(strings.Repeat("n", valkeyv1.MaxNodeNameLength)))).To(Succeed())
	})
})
