package workloadcontroller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// AnnotationTemplateHash on a workload's pod template (hence on its pods) is the hash of the
// desired pod template, rendered config and workload kind it was built from. Comparing it
// with the desired hash tells whether a roll is needed; comparing a pod's with the
// workload's tells whether the pod runs the applied template.
const AnnotationTemplateHash = "valkey.io/template-hash"

// AnnotationRollFrom on a workload records the hash of the template an applied roll
// replaces; it is removed once a Ready pod runs the new template. It makes "Rolling" a
// fact of the cluster rather than a memory of the controller.
const AnnotationRollFrom = "valkey.io/roll-from"

// Volume and container names in the pod.
const (
	containerName = "valkey"
	dataVolume    = "data"
	configVolume  = "config"
	authVolume    = "auth"
	passwordEnv   = "VALKEY_PASSWORD"
	startVolume   = "valkey-start"
	startDir      = "/opt/valkey-operator"
	startBinary   = startDir + "/valkey-start"
	// StartImagePath is where valkey-start lives in the image of Options.StartImage.
	StartImagePath   = "/usr/local/bin/valkey-start"
	podIPEnv         = "POD_IP"
	defaultGraceSecs = 60
	defaultUserID    = 1000
)

// desired is everything the workload controller would apply for a node now.
type desired struct {
	kind     valkeyv1.WorkloadType
	config   string
	template corev1.PodTemplateSpec
	hash     string
	// serviceName of a StatefulSet (see statefulSetServiceName); not in the hash.
	serviceName string
}

// buildDesired renders the node's config and pod template. The error is a *ConfigError when
// the node's config is refused.
func buildDesired(node *valkeyv1.ValkeyNode, opts Options) (*desired, error) {
	conf, err := renderConfig(node, opts.ClusterDomain)
	if err != nil {
		return nil, err
	}
	kind := node.Spec.WorkloadType
	if kind == "" {
		kind = valkeyv1.WorkloadStatefulSet
	}
	restart, err := restartConfig(node, opts.ClusterDomain)
	if err != nil {
		return nil, err
	}
	tmpl := podTemplate(node, opts)
	hash := templateHash(kind, tmpl, restart)
	tmpl.Annotations = map[string]string{AnnotationTemplateHash: hash}
	return &desired{kind: kind, config: conf, template: tmpl, hash: hash}, nil
}

// templateHash is a short hash of everything that, when changed, must restart the pod. The
// volume size is not in it: the claim is referenced by name, so a resize never rolls; nor
// are a cluster node's live config values (restartConfig): they are set with CONFIG SET.
func templateHash(kind valkeyv1.WorkloadType, tmpl corev1.PodTemplateSpec, conf string) string {
	b, err := json.Marshal(struct {
		Kind     valkeyv1.WorkloadType  `json:"kind"`
		Template corev1.PodTemplateSpec `json:"template"`
		Config   string                 `json:"config"`
	}{kind, tmpl, conf})
	if err != nil {
		panic(fmt.Sprintf("marshal pod template: %v", err)) // plain structs always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// selectorLabels select a node's pods; they never change for a node.
func selectorLabels(node *valkeyv1.ValkeyNode) map[string]string {
	return map[string]string{
		valkeyv1.LabelNode:      node.Name,
		valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
		valkeyv1.LabelName:      valkeyv1.NameValue,
	}
}

// podTemplate builds the node's pod template (without the hash annotation).
func podTemplate(node *valkeyv1.ValkeyNode, opts Options) corev1.PodTemplateSpec {
	opts = opts.withDefaults()
	args := []string{"--cluster-announce-ip", "$(" + podIPEnv + ")"}
	env := []corev1.EnvVar{{
		Name:      podIPEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
	}}
	// Passwords reach the server through AuthFile (valkey-start writes it), never through
	// its command line; the CLI of the probes reads REDISCLI_AUTH/VALKEYCLI_AUTH. The
	// controller never reads the Secrets.
	env = append(env, authEnv(node)...)

	data := corev1.Volume{Name: dataVolume}
	if node.Spec.Persistence != nil {
		data.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: valkeyv1.ClaimName(node.Name)}
	} else {
		data.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}

	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: valkeyv1.NodeLabels(node)},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(opts.TerminationGracePeriodSeconds),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext:               podSecurity(node, opts),
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           node.Spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         startCommand(node),
				Args:            args,
				Env:             env,
				Ports: []corev1.ContainerPort{
					{Name: "client", ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
					{Name: "bus", ContainerPort: BusPort, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
				},
				Resources: node.Spec.Resources,
				VolumeMounts: []corev1.VolumeMount{
					{Name: dataVolume, MountPath: DataDir},
					{Name: configVolume, MountPath: ConfigDir, ReadOnly: true},
					{Name: startVolume, MountPath: startDir, ReadOnly: true},
					{Name: authVolume, MountPath: AuthDir},
				},
				SecurityContext: containerSecurity(node),
			}},
			InitContainers: []corev1.Container{installStart(node, opts)},
			Volumes: []corev1.Volume{
				data,
				{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: valkeyv1.ConfigMapName(node.Name)},
				}}},
				{Name: startVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					SizeLimit: ptr.To(resource.MustParse("64Mi")),
				}}},
				// In memory: the password file never reaches the node's disk.
				{Name: authVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
				}}},
			},
		},
	}
	// A stable DNS name under the cluster's headless Service (made by topology). A
	// StatefulSet sets the same on its pod from its own name and serviceName.
	if sub := node.PodSubdomain(); sub != "" {
		tmpl.Spec.Hostname, tmpl.Spec.Subdomain = node.PodHostname(), sub
	}
	withProbes(node, &tmpl.Spec.Containers[0], opts.ExecProbes)
	withACL(node, &tmpl.Spec)
	place(node, &tmpl.Spec)
	withTLS(node, &tmpl.Spec)
	return tmpl
}

// startCommand runs the server through valkey-start (cmd/valkey-start): it fences a crashed
// primary before the server starts and hands a primary's slots to a replica before the
// server stops. --durable when the data set is on the claim (RDB or AOF): a clean stop then
// leaves it whole. --restore-id and --restore-identity on a node restored from a backup
// (restoreArgs). It serves /metrics on MetricsPort (the volume's usage, which the volume
// controller reads, and the server's own figures unless spec.metrics.server is false:
// --server-metrics=false). The container's args follow: they are the server's.
func startCommand(node *valkeyv1.ValkeyNode) []string {
	cmd := []string{startBinary, "run", "--data-dir", DataDir, "--addr", fmt.Sprintf("127.0.0.1:%d", ClientPort),
		"--metrics-addr", fmt.Sprintf(":%d", MetricsPort)}
	if p := node.Spec.Persistence; p != nil && (p.RDBEnabled() || p.AOFEnabled()) {
		cmd = append(cmd, "--durable")
	}
	if !node.Spec.Metrics.ServerMetricsEnabled() {
		cmd = append(cmd, "--server-metrics=false")
	}
	cmd = append(cmd, authArgs(node)...)
	cmd = append(cmd, restoreArgs(node)...)
	return append(cmd, "--", "valkey-server", ConfigDir+"/"+ConfigFile)
}

// installStart is the init container that copies valkey-start from the operator's image
// into the pod, so the user's Valkey image stays unmodified.
func installStart(node *valkeyv1.ValkeyNode, opts Options) corev1.Container {
	return corev1.Container{
		Name:            installStartName,
		Image:           opts.StartImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{StartImagePath, "install", startBinary},
		VolumeMounts:    []corev1.VolumeMount{{Name: startVolume, MountPath: startDir}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: containerSecurity(node),
	}
}
