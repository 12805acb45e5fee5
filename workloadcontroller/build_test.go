package workloadcontroller

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// decode turns an apply configuration into the typed object it sets, and returns the keys
// it sets at the top level, in metadata and in spec: everything else is left to others.
func decode(t *testing.T, ac any, into runtime.Object) (top, meta, spec []string) {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	keysOf := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	sub := func(key string) []string {
		var m map[string]json.RawMessage
		if raw[key] != nil {
			if err := json.Unmarshal(raw[key], &m); err != nil {
				t.Fatal(err)
			}
		}
		return keysOf(m)
	}
	return keysOf(raw), sub("metadata"), sub("spec")
}

// deploymentOf is node without persistence, as a Deployment, and its desired workload.
func deploymentOf(t *testing.T, node *valkeyv1.ValkeyNode) (*valkeyv1.ValkeyNode, *desired) {
	t.Helper()
	ephemeral := node.DeepCopy()
	ephemeral.Spec.Persistence, ephemeral.Spec.WorkloadType = nil, valkeyv1.WorkloadDeployment
	dep, err := buildDesired(ephemeral, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ephemeral, dep
}

func TestBuildWorkload(t *testing.T) {
	node := withName(baseNode())
	node.UID = "uid-1"
	owner := []metav1.OwnerReference{{
		APIVersion: "valkey.io/v1alpha1", Kind: "ValkeyNode", Name: "c-0-0", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{
		valkeyv1.LabelNode: "c-0-0", valkeyv1.LabelManagedBy: "valkey-operator", valkeyv1.LabelName: "valkey",
	}}
	meta := func(d *desired, annotations ...string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{
			Name: "valkey-c-0-0", Namespace: "ns", Labels: valkeyv1.NodeLabels(node), OwnerReferences: owner,
			Annotations: map[string]string{AnnotationTemplateHash: d.hash},
		}
		for i := 0; i+1 < len(annotations); i += 2 {
			m.Annotations[annotations[i]] = annotations[i+1]
		}
		return m
	}
	statefulSet := func(d *desired, m metav1.ObjectMeta) runtime.Object {
		return &appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: m,
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](1), Selector: selector, Template: d.template,
				PodManagementPolicy: appsv1.ParallelPodManagement,
				UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			},
		}
	}
	sts, err := buildDesired(node, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, dep := deploymentOf(t, node)

	for _, tc := range []struct {
		name     string
		d        *desired
		rollFrom string
		want     runtime.Object
		spec     []string // the only spec fields set
	}{
		{
			name: "StatefulSet", d: sts,
			want: statefulSet(sts, meta(sts)),
			spec: []string{"podManagementPolicy", "replicas", "selector", "template", "updateStrategy"},
		},
		{
			name: "StatefulSet during a roll", d: sts, rollFrom: "0123abcd",
			want: statefulSet(sts, meta(sts, AnnotationRollFrom, "0123abcd")),
			spec: []string{"podManagementPolicy", "replicas", "selector", "template", "updateStrategy"},
		},
		{
			name: "Deployment", d: dep, rollFrom: "0123abcd",
			want: &appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: meta(dep, AnnotationRollFrom, "0123abcd"),
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](1), Selector: selector, Template: dep.template,
					Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				},
			},
			spec: []string{"replicas", "selector", "strategy", "template"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(runtime.Object)
			top, metaKeys, spec := decode(t, buildWorkload(node, tc.d, tc.rollFrom), got)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("built\n%+v\nwant\n%+v", got, tc.want)
			}
			if want := []string{"apiVersion", "kind", "metadata", "spec"}; !slices.Equal(top, want) {
				t.Errorf("sets %v, want only %v", top, want)
			}
			if want := []string{"annotations", "labels", "name", "namespace", "ownerReferences"}; !slices.Equal(metaKeys, want) {
				t.Errorf("sets metadata %v, want only %v", metaKeys, want)
			}
			if !slices.Equal(spec, tc.spec) {
				t.Errorf("sets spec %v, want only %v", spec, tc.spec)
			}
		})
	}
}

func TestBuildConfigMap(t *testing.T) {
	node := withName(baseNode())
	node.UID = "uid-1"
	got := &corev1.ConfigMap{}
	top, meta, _ := decode(t, buildConfigMap(node, "port 6379\n"), got)
	want := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "valkey-c-0-0-config", Namespace: "ns", Labels: valkeyv1.NodeLabels(node),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "valkey.io/v1alpha1", Kind: "ValkeyNode", Name: "c-0-0", UID: "uid-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data: map[string]string{"valkey.conf": "port 6379\n"},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("built\n%+v\nwant\n%+v", got, want)
	}
	if w := []string{"apiVersion", "data", "kind", "metadata"}; !slices.Equal(top, w) {
		t.Errorf("sets %v, want only %v", top, w)
	}
	if w := []string{"labels", "name", "namespace", "ownerReferences"}; !slices.Equal(meta, w) {
		t.Errorf("sets metadata %v, want only %v", meta, w)
	}
}

// The applied pod template is exactly the one the template hash is computed from.
func TestTemplateConfig(t *testing.T) {
	for _, change := range []func(*valkeyv1.ValkeyNode){
		func(*valkeyv1.ValkeyNode) {},
		func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence = nil },
		func(n *valkeyv1.ValkeyNode) { n.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "s", Key: "k"} },
	} {
		n := withName(baseNode())
		change(n)
		d, err := buildDesired(n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		typed, _ := json.Marshal(d.template)
		applied, _ := json.Marshal(templateConfig(d.template))
		if string(typed) != string(applied) {
			t.Errorf("applied template\n%s\ndiffers from the hashed one\n%s", applied, typed)
		}
	}
}
