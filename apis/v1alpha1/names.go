package v1alpha1

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label keys on every object the operator makes for a node (ValkeyNode, PVC, StatefulSet,
// Pod, ConfigMap). Caches are filtered on LabelManagedBy.
const (
	LabelCluster   = "valkey.io/cluster"
	LabelShard     = "valkey.io/shard"
	LabelReplica   = "valkey.io/replica"
	LabelNode      = "valkey.io/node"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"

	// ManagedByValue is the value of LabelManagedBy on everything the operator makes.
	ManagedByValue = "valkey-operator"
	// NameValue is the value of LabelName.
	NameValue = "valkey"
)

// Annotations.
const (
	// AnnotationClaimIdentity on a PVC records the identity it belongs to:
	// "<cluster UID>/<node name>" (for a node outside any cluster, "<node UID>/<node name>").
	// The volume controller never adopts a claim whose identity differs, unless the claim was
	// released (AnnotationClaimReleased) by a node of the same name.
	AnnotationClaimIdentity = "valkey.io/claim-identity"
	// AnnotationClaimReleased on a retained PVC records when its node was deleted. A node of
	// the same name (for instance in a cluster recreated with the same name) reuses it.
	AnnotationClaimReleased = "valkey.io/released-at"
	// AnnotationSkipDrain on a ValkeyNode being deleted lets the volume controller remove the
	// pvc-protection finalizer without waiting for Drained=True. For emergencies: slots the
	// node still owns become unavailable. Its use is recorded as a Warning event.
	AnnotationSkipDrain = "valkey.io/skip-drain"
	// AnnotationAdopt "true" on a Secret <cluster>-auth, <cluster>-operator or <cluster>-acl
	// that has no controller lets a cluster without nodes use it (a Secret restored from a
	// backup before the cluster is applied again). Without it such a Secret is used only
	// by a cluster whose nodes already run with it.
	AnnotationAdopt = "valkey.io/adopt"
	// AnnotationPaused on a ValkeyCluster or a ValkeyNode stops the controllers from changing
	// anything of it (see Paused); its value, when not "true", is shown as the reason.
	// Removing it resumes from what is there.
	AnnotationPaused = "valkey.io/paused"
	// AnnotationAllowDowngrade "true" on a ValkeyCluster lets a spec.image of an older
	// major than its servers run roll, and one whose version cannot be read (see
	// ConditionVersionRefused): the rolled nodes of an older major cannot load the data the
	// newer servers wrote.
	AnnotationAllowDowngrade = "valkey.io/allow-downgrade"
)

// Paused tells whether obj carries AnnotationPaused (with any value but "false").
func Paused(annotations map[string]string) bool {
	v, ok := annotations[AnnotationPaused]
	return ok && v != "false"
}

// NodePaused tells whether the controllers leave a ValkeyNode alone: it carries
// AnnotationPaused, or the topology controller reports it Paused (its cluster is paused).
func NodePaused(n *ValkeyNode) bool {
	if Paused(n.Annotations) {
		return true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == ConditionPaused {
			return c.Status == "True"
		}
	}
	return false
}

// DefaultPasswordKey is the Secret key holding the password when none is named.
const DefaultPasswordKey = "password"

// Name limits. A StatefulSet's pods carry the label controller-revision-hash
// "<StatefulSet name>-<hash of up to 10 characters>", which must fit a label value (63), so
// the StatefulSet name valkey-<node> must fit 52. That is the tightest limit on a node name:
// the label valkey.io/node (63), the pod <StatefulSet>-0 (63), the claim and ConfigMap names
// (253) and anything named after the cluster and a shard are shorter or looser. The CEL rules
// on ValkeyCluster and ValkeyNode (see their types) use these figures.
const (
	// MaxLabelValueLength is the Kubernetes limit on a label value.
	MaxLabelValueLength = 63
	// MaxWorkloadNameLength is the longest StatefulSet name whose revision-hash label fits.
	MaxWorkloadNameLength = MaxLabelValueLength - 11
	// MaxNodeNameLength is the longest ValkeyNode name: valkey-<node> fits MaxWorkloadNameLength.
	MaxNodeNameLength = MaxWorkloadNameLength - len("valkey-")
)

// MaxClusterNameLength is the longest ValkeyCluster name for the given shards and replicas:
// its last node, <name>-<shards-1>-<replicas>, must fit MaxNodeNameLength.
func MaxClusterNameLength(shards, replicas int32) int {
	return MaxNodeNameLength - len(NodeName("", shards-1, replicas))
}

// NodeName is the name of the ValkeyNode for a shard and replica index of a cluster.
func NodeName(cluster string, shard, replica int32) string {
	return fmt.Sprintf("%s-%d-%d", cluster, shard, replica)
}

// ClaimName is the name of a node's PersistentVolumeClaim.
func ClaimName(node string) string { return "valkey-" + node + "-data" }

// WorkloadName is the name of a node's StatefulSet (or Deployment).
func WorkloadName(node string) string { return "valkey-" + node }

// ConfigMapName is the name of a node's rendered valkey.conf ConfigMap.
func ConfigMapName(node string) string { return "valkey-" + node + "-config" }

// DisruptionBudgetName is the name of the PodDisruptionBudget of a shard of a cluster.
func DisruptionBudgetName(cluster string, shard int32) string {
	return fmt.Sprintf("valkey-%s-%d", cluster, shard)
}

// NetworkPolicyName is the name of a cluster's NetworkPolicy.
func NetworkPolicyName(cluster string) string { return "valkey-" + cluster }

// PasswordSecretName is the name of the Secret generated for a cluster without one.
func PasswordSecretName(cluster string) string { return cluster + "-auth" }

// ClientServiceName is the ClusterIP Service selecting a cluster's ready pods: the seed
// address of cluster-aware clients.
func ClientServiceName(cluster string) string { return "valkey-" + cluster }

// HeadlessServiceName is the headless Service that gives each pod of a cluster the DNS name
// <node>.<HeadlessServiceName>.<namespace>.svc.<cluster domain>.
func HeadlessServiceName(cluster string) string { return "valkey-" + cluster + "-nodes" }

// DefaultClusterDomain is the DNS domain of a Kubernetes cluster unless told otherwise
// (the workload controller's --cluster-domain).
const DefaultClusterDomain = "cluster.local"

// PodHostname is the host name of the pod of the node named node: the name of its
// StatefulSet's only pod, valkey-<node>-0 (a StatefulSet gives its pods their own names as
// host names; a Deployment's pod gets the same from its template).
func PodHostname(node string) string { return WorkloadName(node) + "-0" }

// PodHostname is the host name of the node's pod (see the function PodHostname).
func (n *ValkeyNode) PodHostname() string { return PodHostname(n.Name) }

// PodSubdomain is the subdomain (the headless Service) of the pod of a node of a cluster,
// "" for a node outside any cluster or one whose names cannot be DNS labels (a cluster
// name with a dot: its Services cannot exist either).
func (n *ValkeyNode) PodSubdomain() string {
	if n.Spec.ClusterName == "" {
		return ""
	}
	sub := HeadlessServiceName(n.Spec.ClusterName)
	if len(validation.IsDNS1123Label(n.PodHostname())) > 0 || len(validation.IsDNS1035Label(sub)) > 0 {
		return ""
	}
	return sub
}

// PodDNSName is the DNS name of the pod of a node of a cluster:
// <PodHostname>.<HeadlessServiceName>.<namespace>.svc.<domain>, that is
// valkey-<node>-0.valkey-<cluster>-nodes.<namespace>.svc.<domain>; "" when PodSubdomain is.
func (n *ValkeyNode) PodDNSName(domain string) string {
	sub := n.PodSubdomain()
	if sub == "" {
		return ""
	}
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return n.PodHostname() + "." + sub + "." + n.Namespace + ".svc." + domain
}

// OperatorUser is the Valkey ACL user the operator and the pods' probes authenticate as on
// nodes of a cluster: never the default user.
const OperatorUser = "valkey-operator"

// OperatorSecretName is the generated Secret holding OperatorUser's password (key
// DefaultPasswordKey).
func OperatorSecretName(cluster string) string { return cluster + "-operator" }

// ACLSecretName is the Secret, written by the topology controller, holding the cluster's
// users (key ACLFileKey: ACL rules with hashed passwords) that a node's server starts with.
func ACLSecretName(cluster string) string { return cluster + "-acl" }

// ACLFileKey is the key of the ACL Secret holding the users' ACL lines.
const ACLFileKey = "users.acl"

// TLSSecretName is the Secret with the servers' certificate (tls.crt, tls.key, ca.crt)
// that the topology controller issues for a cluster with tls.generate.
func TLSSecretName(cluster string) string { return cluster + "-tls" }

// CASecretName is the Secret with the CA (tls.crt, tls.key) that the topology controller
// keeps for a cluster with tls.generate; it is never mounted in a pod.
func CASecretName(cluster string) string { return cluster + "-ca" }

// NodeLabels are the labels of a ValkeyNode and of everything made for it.
func NodeLabels(n *ValkeyNode) map[string]string {
	l := map[string]string{
		LabelNode:      n.Name,
		LabelManagedBy: ManagedByValue,
		LabelName:      NameValue,
	}
	if n.Spec.ClusterName != "" {
		l[LabelCluster] = n.Spec.ClusterName
		l[LabelShard] = strconv.Itoa(int(n.Spec.Shard))
		l[LabelReplica] = strconv.Itoa(int(n.Spec.ReplicaIndex))
	}
	return l
}

// PasswordSecretRef returns the node's password Secret reference with the key defaulted,
// or nil when the node has no password.
func (n *ValkeyNode) PasswordSecretRef() *SecretKeyRef {
	if n.Spec.PasswordSecret == nil || n.Spec.PasswordSecret.Name == "" {
		return nil
	}
	ref := *n.Spec.PasswordSecret
	if ref.Key == "" {
		ref.Key = DefaultPasswordKey
	}
	return &ref
}

// TLSSecret is the name of the Secret holding the node's certificate, "" without TLS:
// tls.secretName, or the generated TLSSecretName of its cluster.
func (n *ValkeyNode) TLSSecret() string {
	switch {
	case n.Spec.TLS == nil:
		return ""
	case n.Spec.TLS.SecretName != "":
		return n.Spec.TLS.SecretName
	case n.Spec.ClusterName != "":
		return TLSSecretName(n.Spec.ClusterName)
	}
	return ""
}

// Backup labels.
const (
	// LabelBackup is on every VolumeSnapshot of a backup: the ValkeyBackup's name.
	LabelBackup = "valkey.io/backup"
	// LabelBackupSchedule is on every ValkeyBackup a schedule created: the schedule's name,
	// for people and selectors. It proves nothing: a schedule's backups outlive it, so a
	// later schedule of the same name finds its predecessor's under it.
	LabelBackupSchedule = "valkey.io/backup-schedule"
	// LabelBackupScheduleUID is on every ValkeyBackup a schedule created: the schedule's UID.
	// A schedule counts, skips for and prunes only the backups that carry its UID and name
	// its cluster (the backups have no owner: deleting a schedule keeps them).
	LabelBackupScheduleUID = "valkey.io/backup-schedule-uid"
)

// SnapshotName is the VolumeSnapshot of one shard of a backup: "<backup>-<shard>".
func SnapshotName(backup string, shard int32) string {
	return backup + "-" + strconv.Itoa(int(shard))
}

// MaxScheduleNameLength is the longest ValkeyBackupSchedule name: its backups are named
// "<schedule>-<unix minute>" (8 digits until the year 2160) and each backup's name is the
// value of the label LabelBackup on its snapshots (63).
const MaxScheduleNameLength = MaxLabelValueLength - len("-") - 8

// ScheduledBackupName is the backup a schedule creates for a scheduled time:
// "<schedule>-<unix minute>", so that a retried creation finds the same object.
func ScheduledBackupName(schedule string, at time.Time) string {
	return schedule + "-" + strconv.FormatInt(at.Unix()/60, 10)
}
