package workloadcontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

func baseNode() *valkeyv1.ValkeyNode {
	return &valkeyv1.ValkeyNode{
		Spec: valkeyv1.ValkeyNodeSpec{
			ClusterName: "c",
			ServerSpec: valkeyv1.ServerSpec{
				Image:       "valkey/valkey:8.1",
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi")},
			},
		},
	}
}

// TestRestartConfigLeavesOutLiveDefaults: the operator's own live defaults
// (cluster-node-timeout) are in the ConfigMap but not in what decides a restart, for a node
// in a cluster or alone, so that an operator bringing a new one restarts no server.
func TestRestartConfigLeavesOutLiveDefaults(t *testing.T) {
	for _, cluster := range []string{"c", ""} {
		n := withName(baseNode())
		n.Spec.ClusterName = cluster
		conf, err := renderConfig(n, "")
		if err != nil {
			t.Fatal(err)
		}
		restart, err := restartConfig(n, "")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(conf, "\ncluster-node-timeout \""+valkeyconf.DefaultNodeTimeout+"\"\n") {
			t.Errorf("cluster %q: the ConfigMap's valkey.conf lacks cluster-node-timeout %s:\n%s", cluster, valkeyconf.DefaultNodeTimeout, conf)
		}
		if strings.Contains(restart, "cluster-node-timeout") {
			t.Errorf("cluster %q: what decides a restart names cluster-node-timeout:\n%s", cluster, restart)
		}
	}
}

func TestTemplateHash(t *testing.T) {
	base, err := buildDesired(withName(baseNode()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*valkeyv1.ValkeyNode)
		rolls  bool
	}{
		{"nothing", func(*valkeyv1.ValkeyNode) {}, false},
		{"volume size", func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence.Size = resource.MustParse("10Gi") }, false},
		{"reclaim policy", func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence.ReclaimPolicy = valkeyv1.ReclaimDelete }, false},
		{"image", func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:9.0" }, true},
		{"config", func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"maxclients": "500"} }, true},
		// The topology controller sets a cluster node's live keys with CONFIG SET.
		{"live config of a cluster node", func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"maxmemory": "1gb"} }, false},
		{"node timeout of a cluster node", func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"cluster-node-timeout": "2000"} }, false},
		{"live config of a node alone", func(n *valkeyv1.ValkeyNode) {
			n.Spec.ClusterName = ""
			n.Spec.Config = map[string]string{"maxmemory": "1gb"}
		}, true},
		{"AOF", func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence.AOF = &valkeyv1.AOFSpec{Enabled: true} }, true},
		{"no persistence", func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence = nil }, true},
		// A cluster node's server starts with the default user's password from the ACL
		// Secret; a new one is applied live.
		{"password of a cluster node", func(n *valkeyv1.ValkeyNode) { n.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "s"} }, false},
		{"resources", func(n *valkeyv1.ValkeyNode) {
			n.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, true},
		{"shard anti-affinity", func(n *valkeyv1.ValkeyNode) {
			n.Spec.Scheduling = &valkeyv1.SchedulingSpec{ShardAntiAffinity: valkeyv1.ShardAntiAffinityRequired}
		}, true},
		{"tolerations", func(n *valkeyv1.ValkeyNode) {
			n.Spec.Scheduling = &valkeyv1.SchedulingSpec{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}}
		}, true},
		{"image pull secrets", func(n *valkeyv1.ValkeyNode) { n.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "r"}} }, true},
		{"pod security context", func(n *valkeyv1.ValkeyNode) {
			n.Spec.PodSecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{5}}
		}, true},
		{"workload kind", func(n *valkeyv1.ValkeyNode) {
			n.Spec.Persistence = nil
			n.Spec.WorkloadType = valkeyv1.WorkloadDeployment
		}, true},
	} {
		n := withName(baseNode())
		tc.change(n)
		d, err := buildDesired(n, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rolled := d.hash != base.hash; rolled != tc.rolls {
			t.Errorf("%s: hash changed = %v, want %v", tc.name, rolled, tc.rolls)
		}
		if d.template.Annotations[AnnotationTemplateHash] != d.hash {
			t.Errorf("%s: the pod template does not carry its hash", tc.name)
		}
	}
	// The kind alone changes the hash.
	st, _ := buildDesired(withName(&valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Image: "i"}}}), Options{})
	dp, _ := buildDesired(withName(&valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Image: "i", WorkloadType: valkeyv1.WorkloadDeployment}}}), Options{})
	if st.hash == dp.hash {
		t.Error("StatefulSet and Deployment of the same template have the same hash")
	}
}

func withName(n *valkeyv1.ValkeyNode) *valkeyv1.ValkeyNode {
	n.Name, n.Namespace = "c-0-0", "ns"
	return n
}

func TestPodTemplate(t *testing.T) {
	n := withName(baseNode())
	n.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "c-auth", Key: "pw"}
	tmpl := podTemplate(n, Options{TerminationGracePeriodSeconds: 120, RunAsUser: 999, StartImage: "op/workload:1"})
	spec := tmpl.Spec
	c := spec.Containers[0]
	ic := spec.InitContainers[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"one container named valkey", len(spec.Containers) == 1 && c.Name == "valkey"},
		{"claim valkey-c-0-0-data", spec.Volumes[0].PersistentVolumeClaim != nil && spec.Volumes[0].PersistentVolumeClaim.ClaimName == "valkey-c-0-0-data"},
		{"config from valkey-c-0-0-config", spec.Volumes[1].ConfigMap != nil && spec.Volumes[1].ConfigMap.Name == "valkey-c-0-0-config"},
		{"config mounted read-only", c.VolumeMounts[1].MountPath == "/etc/valkey" && c.VolumeMounts[1].ReadOnly},
		{"grace period from options", *spec.TerminationGracePeriodSeconds == 120},
		{"uid, gid, fsGroup from options", *spec.SecurityContext.RunAsUser == 999 && *spec.SecurityContext.RunAsGroup == 999 && *spec.SecurityContext.FSGroup == 999},
		{"non-root", *spec.SecurityContext.RunAsNonRoot && *c.SecurityContext.RunAsNonRoot},
		{"read-only root", *c.SecurityContext.ReadOnlyRootFilesystem},
		{"no privilege escalation", !*c.SecurityContext.AllowPrivilegeEscalation},
		{"all capabilities dropped", len(c.SecurityContext.Capabilities.Drop) == 1 && c.SecurityContext.Capabilities.Drop[0] == "ALL"},
		{"RuntimeDefault seccomp", spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"no service account token", !*spec.AutomountServiceAccountToken},
		{"IfNotPresent", c.ImagePullPolicy == corev1.PullIfNotPresent},
		{"operator password from c-operator", c.Env[1].Name == "VALKEY_OPERATOR_PASSWORD" &&
			c.Env[1].ValueFrom.SecretKeyRef.Key == "password" && c.Env[1].ValueFrom.SecretKeyRef.Name == "c-operator"},
		{"startup and readiness asked of valkey-start, which fails them on error replies", c.StartupProbe.HTTPGet != nil &&
			c.StartupProbe.HTTPGet.Path == "/readyz" && c.StartupProbe.HTTPGet.Port.IntVal == 9121 && c.ReadinessProbe.HTTPGet.Path == "/readyz"},
		{"the ACL Secret mounted read-only without subPath", spec.Volumes[len(spec.Volumes)-1].Secret != nil &&
			spec.Volumes[len(spec.Volumes)-1].Secret.SecretName == "c-acl" &&
			c.VolumeMounts[len(c.VolumeMounts)-1].MountPath == "/etc/valkey-acl" && c.VolumeMounts[len(c.VolumeMounts)-1].SubPath == ""},
		{"liveness tolerates error replies", c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path == "/livez"},
		{"startup allows an hour", c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold >= 3600},
		{"startup asked every second", c.StartupProbe.PeriodSeconds == 1},
		{"readiness asked every second, not Ready after 10 s without", c.ReadinessProbe.PeriodSeconds == 1 &&
			c.ReadinessProbe.PeriodSeconds*c.ReadinessProbe.FailureThreshold == 10},
		{"node labels", tmpl.Labels[valkeyv1.LabelCluster] == "c" && tmpl.Labels[valkeyv1.LabelNode] == "c-0-0"},
		{"valkey-start copied from the start image", len(spec.InitContainers) == 1 && ic.Image == "op/workload:1" &&
			ic.Command[0] == StartImagePath && ic.Command[1] == "install" && ic.VolumeMounts[0].Name == spec.Volumes[2].Name},
		{"the init container is restricted too", *ic.SecurityContext.ReadOnlyRootFilesystem && !*ic.SecurityContext.AllowPrivilegeEscalation},
		{"the server runs under valkey-start, durable with RDB", strings.Join(c.Command, " ") ==
			"/opt/valkey-operator/valkey-start run --data-dir /data --addr 127.0.0.1:6379 --metrics-addr :9121 --durable --auth-file /run/valkey-auth/auth.conf "+
				"--user valkey-operator --password-env VALKEY_OPERATOR_PASSWORD --acl-file /etc/valkey-acl/users.acl -- valkey-server /etc/valkey/valkey.conf"},
		{"valkey-start mounted read-only", c.VolumeMounts[2].MountPath == "/opt/valkey-operator" && c.VolumeMounts[2].ReadOnly},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("pod template: want %s", ch.what)
		}
	}
	n.Spec.Persistence = nil
	ephemeral := podTemplate(n, Options{})
	if v := ephemeral.Spec.Volumes[0]; v.EmptyDir == nil || v.PersistentVolumeClaim != nil {
		t.Errorf("without persistence /data is %+v, want an emptyDir", v.VolumeSource)
	}
	if cmd := strings.Join(ephemeral.Spec.Containers[0].Command, " "); strings.Contains(cmd, "--durable") {
		t.Errorf("without persistence the server runs %q, want no --durable (a restart always fences)", cmd)
	}
}

// spec.metrics.server false turns the server's figures off with a valkey-start flag; the
// default renders none, so a template of before the field stays the same.
func TestStartCommandServerMetrics(t *testing.T) {
	n := &valkeyv1.ValkeyNode{}
	if cmd := strings.Join(startCommand(n), " "); strings.Contains(cmd, "--server-metrics") {
		t.Fatalf("the default renders a --server-metrics flag: %s", cmd)
	}
	n.Spec.Metrics = &valkeyv1.MetricsSpec{Server: ptr.To(true)}
	if cmd := strings.Join(startCommand(n), " "); strings.Contains(cmd, "--server-metrics") {
		t.Fatalf("server: true renders a flag: %s", cmd)
	}
	n.Spec.Metrics.Server = ptr.To(false)
	if cmd := strings.Join(startCommand(n), " "); !strings.Contains(cmd, "--server-metrics=false") {
		t.Fatalf("server: false: %s", cmd)
	}
}
