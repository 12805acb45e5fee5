package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// releasedVolume is a Released local volume of node, backed by file, as the provisioner of
// that node makes them.
func releasedVolume(name, node, file string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{annProvisionedBy: "test/loop", annBackingFile: file}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/dev/loop9"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
	}
}

// With one provisioner per node, a provisioner deletes the Released volumes of its own node
// only: another node's volume (its loop device is on that node) is left to that node's.
func TestReleasedVolumeOfAnotherNodeLeftAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	theirs, mine := filepath.Join(dir, "pvc-theirs.img"), filepath.Join(dir, "pvc-mine.img")
	for _, f := range []string{theirs, mine} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The other node's volume is there first: the work queue (first in, first out) looks at
	// it before the volume created below, whose deletion therefore comes after.
	client := fake.NewClientset(releasedVolume("pvc-theirs", "node2", theirs))
	cl := fakeClients(client)
	loop := &fakeLoop{devs: map[string]string{}}
	p := newProvisioner(cl, "test/loop", "node1", dir, loop, copyImages{})
	cl.start(ctx)
	go p.Run(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		t.Fatal("caches not synced")
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, releasedVolume("pvc-mine", "node1", mine), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-mine", metav1.GetOptions{}); err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("timed out waiting for the deletion of this node's volume")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-theirs", metav1.GetOptions{}); err != nil {
		t.Errorf("the other node's volume was deleted: %v", err)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("the other node's backing file was removed: %v", err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("this node's backing file is still there: %v", err)
	}
}
