package localcluster_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// BenchmarkSampleReady times the sample from its creation to ValkeyCluster Ready, and the
// same number of pods and claims applied bare as one StatefulSet (same image and storage
// class, Parallel pod management) from its creation to every pod Ready, and prints the ratio.
func BenchmarkSampleReady(b *testing.B) {
	c := clusterClient(b)
	ctx := context.Background()
	vc := sample(b, namespace(b, c, "bench-ready"))
	bareNS := namespace(b, c, "bench-bare")

	sts := bareStatefulSet(bareNS, vc)
	start := time.Now()
	if err := c.Create(ctx, sts); err != nil {
		b.Fatal(err)
	}
	err := poll(ctx, 10*time.Minute, "bare StatefulSet Ready", func() (bool, error) {
		cur := &appsv1.StatefulSet{}
		err := c.Get(ctx, client.ObjectKeyFromObject(sts), cur)
		return err == nil && cur.Status.ReadyReplicas == *sts.Spec.Replicas, err
	})
	if err != nil {
		b.Fatal(err)
	}
	bare := time.Since(start)

	start = time.Now()
	if err := c.Create(ctx, vc); err != nil {
		b.Fatal(err)
	}
	if err := poll(ctx, 15*time.Minute, "sample Ready", func() (bool, error) { return clusterReady(ctx, c, vc) }); err != nil {
		b.Fatal(err)
	}
	op := time.Since(start)
	b.Cleanup(func() { _ = c.Delete(context.Background(), vc) })

	b.ReportMetric(op.Seconds(), "operator-ready-s")
	b.ReportMetric(bare.Seconds(), "bare-ready-s")
	b.ReportMetric(op.Seconds()/bare.Seconds(), "ratio")
	b.Logf("sample %d×%d (%d pods, %d claims): Ready in %.1f s; bare StatefulSet: every pod Ready in %.1f s; operator/bare = %.2f×",
		vc.Spec.Shards, vc.Spec.Replicas, sampleNodes(vc), sampleNodes(vc), op.Seconds(), bare.Seconds(), op.Seconds()/bare.Seconds())
}

// bareStatefulSet runs the sample's pods bare: valkey-server in cluster mode on a claim of
// the sample's size and class per pod, Ready when its port answers.
func bareStatefulSet(ns string, vc *valkeyv1.ValkeyCluster) *appsv1.StatefulSet {
	labels := map[string]string{"app": "bench-bare"}
	p := vc.Spec.Persistence
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(sampleNodes(vc)),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To(int64(1000))},
					Containers: []corev1.Container{{
						Name: "valkey", Image: vc.Spec.Image,
						Args:           []string{"--port", "6379", "--dir", "/data", "--cluster-enabled", "yes", "--appendonly", "no"},
						Ports:          []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}},
						VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(6379)}}, PeriodSeconds: 1},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: p.StorageClassName,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(p.Size.String())}},
				},
			}},
		},
	}
}
