// Package workloadcontroller is the workload controller (see docs/contract.md for what it
// owns): for each ValkeyNode it renders valkey.conf into a ConfigMap, runs the server as a
// one-replica StatefulSet (or Deployment) that mounts the node's claim at /data once the
// volume controller reports VolumeReady, reports WorkloadReady and status.workload from the
// pod, and rolls a changed pod template only once the topology controller approves it.
package workloadcontroller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Name of the controller: its binary, leader election Lease and metrics prefix.
const Name = "workload-controller"

// Options are the controller's own settings (the binary fills them from flags).
type Options struct {
	// TerminationGracePeriodSeconds of the server pods: time to save the RDB snapshot on
	// SIGTERM before the kubelet kills the server. Raise it for large data sets.
	TerminationGracePeriodSeconds int64 `mapstructure:"termination-grace-period-seconds"`
	// RunAsUser is the user, group and fsGroup ID of the server pods (the group owns /data).
	RunAsUser int64 `mapstructure:"run-as-user"`
	// StartImage is the image holding valkey-start at StartImagePath (the workload
	// controller's own image): an init container copies it into every server pod.
	StartImage string `mapstructure:"start-image"`
	// IgnoreNodes: the controller neither reads nor watches Kubernetes nodes (cluster-scoped),
	// for an install without cluster-wide rights. WorkloadReady then cannot say that a pod
	// is not ready because its Kubernetes node is lost (reason NodeNotReady).
	IgnoreNodes bool `mapstructure:"ignore-nodes"`
	// MaxConcurrentReconciles is the number of ValkeyNodes reconciled at once.
	MaxConcurrentReconciles int `mapstructure:"max-concurrent-reconciles"`
	// VolumeReportGrace is how long a new node with persistence, whose VolumeReady the
	// volume controller has not written yet, goes without a WorkloadReady: that report
	// normally comes within a moment, and WaitingForVolume would be superseded at once.
	// Past it WorkloadReady=False, WaitingForVolume says that VolumeReady is missing.
	VolumeReportGrace time.Duration `mapstructure:"-"`
	// ClusterDomain is the Kubernetes cluster's DNS domain: a pod's DNS name is
	// valkey-<node>-0.valkey-<cluster>-nodes.<namespace>.svc.<ClusterDomain>.
	ClusterDomain string `mapstructure:"cluster-domain"`
	// OperatorNamespace is the namespace the operator runs in: the NetworkPolicy of a node
	// outside any cluster admits its volume controller to valkey-start's metrics port.
	OperatorNamespace string `mapstructure:"operator-namespace"`
	// ExecProbes gives the pod template's probes their earlier form, valkey-cli run in the
	// container: set only while a workload's running valkey-start is kept (keepStartImage).
	ExecProbes bool `mapstructure:"-"`
}

// DefaultOptions are the settings used for zero values.
func DefaultOptions() Options {
	return Options{TerminationGracePeriodSeconds: defaultGraceSecs, RunAsUser: defaultUserID, MaxConcurrentReconciles: 8,
		VolumeReportGrace: 10 * time.Second, ClusterDomain: valkeyv1.DefaultClusterDomain}
}

// Validate checks the settings.
func (o Options) Validate() error {
	if o.TerminationGracePeriodSeconds < 0 {
		return fmt.Errorf("termination-grace-period-seconds must not be negative, not %d", o.TerminationGracePeriodSeconds)
	}
	if o.RunAsUser < 0 {
		return fmt.Errorf("run-as-user must not be negative, not %d", o.RunAsUser)
	}
	if o.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("max-concurrent-reconciles must not be negative, not %d", o.MaxConcurrentReconciles)
	}
	if o.VolumeReportGrace < 0 {
		return fmt.Errorf("volume report grace must not be negative, not %s", o.VolumeReportGrace)
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterDomain); o.ClusterDomain != "" && len(errs) > 0 {
		return fmt.Errorf("cluster-domain %q is not a DNS domain: %s", o.ClusterDomain, strings.Join(errs, "; "))
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.TerminationGracePeriodSeconds == 0 {
		o.TerminationGracePeriodSeconds = d.TerminationGracePeriodSeconds
	}
	if o.RunAsUser == 0 {
		o.RunAsUser = d.RunAsUser
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = d.MaxConcurrentReconciles
	}
	if o.VolumeReportGrace == 0 {
		o.VolumeReportGrace = d.VolumeReportGrace
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = d.ClusterDomain
	}
	return o
}

// CacheOptions are the filters of the controller's caches: only the StatefulSets,
// Deployments, Pods and ConfigMaps the operator made, only the NetworkPolicies made for a
// node (its own, of a node outside any cluster: a cluster's, which the topology controller
// makes, has no node label), only the StatefulSet controller's FailedCreate events.
// Workloads, pods, ConfigMaps and Kubernetes nodes are cached without what the controller
// never reads (cachetransform.go): the pod template's spec above all, and valkey.conf, of
// which a digest is kept.
func CacheOptions() map[client.Object]cache.ByObject {
	nodeMade, _ := labels.NewRequirement(valkeyv1.LabelNode, selection.Exists, nil) // a valid requirement: no error
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue})}
	return map[client.Object]cache.ByObject{
		&appsv1.StatefulSet{}:         {Label: managed.Label, Transform: slimWorkload},
		&appsv1.Deployment{}:          {Label: managed.Label, Transform: slimWorkload},
		&corev1.Pod{}:                 {Label: managed.Label, Transform: slimPod},
		&corev1.ConfigMap{}:           {Label: managed.Label, Transform: slimConfigMap},
		&networkingv1.NetworkPolicy{}: {Label: managed.Label.Add(*nodeMade)},
		&corev1.Event{}:               {Field: fields.ParseSelectorOrDie(failedCreateEvents)},
		&corev1.Node{}:                {Transform: slimNode},
		&valkeyv1.ValkeyNode{}:        {Transform: slimValkeyNode},
	}
}

// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=list

// SetupWithManager registers the controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.StartImage == "" {
		return fmt.Errorf("start-image is required: the image holding %s", StartImagePath)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, IndexPodNodeName, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index pods by node: %w", err)
	}
	opts = opts.withDefaults()
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(valkeyv1.FieldManagerWorkload),
		Options:   opts,
		Status:    status.NewApplier(mgr.GetClient(), valkeyv1.FieldManagerWorkload),
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		For(&valkeyv1.ValkeyNode{}, builder.WithPredicates(nodePredicate())).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToNode)).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(eventToNode))
	if !opts.IgnoreNodes {
		b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodeToNodes(mgr.GetClient())),
			builder.WithPredicates(nodeReadyChanged()))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("build %s: %w", Name, err)
	}
	return nil
}

// nodePredicate wakes the controller on spec or annotation changes, on deletion, and when a
// condition it waits for changes (VolumeReady, RollApproved, Drained, ConfigApplied, Paused) - never on its own
// status writes.
func nodePredicate() predicate.Predicate {
	return predicate.Or(
		predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		status.DeletionChanged(),
		status.ConditionChanged(valkeyv1.ConditionVolumeReady, valkeyv1.ConditionRollApproved, valkeyv1.ConditionDrained, valkeyv1.ConditionConfigApplied, valkeyv1.ConditionPaused),
	)
}

// podToNode maps a pod to its ValkeyNode by the valkey.io/node label: only to look at the
// node again, which takes a pod for its own only by ownership (nodePods).
func podToNode(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[valkeyv1.LabelNode]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// nodeReadyChanged passes Kubernetes nodes created or deleted, and updates that change their
// Ready condition's status (not the heartbeats).
func nodeReadyChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return nodeReady(e.ObjectOld) != nodeReady(e.ObjectNew)
		},
	}
}

func nodeReady(o client.Object) corev1.ConditionStatus {
	if n, ok := o.(*corev1.Node); ok {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
	}
	return ""
}
