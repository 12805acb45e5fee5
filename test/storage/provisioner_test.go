package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRoundSize(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{0, 300 << 20},
		{1, 300 << 20},
		{100 << 20, 300 << 20},
		{300 << 20, 300 << 20},
		{300<<20 + 1, 301 << 20},
		{1 << 30, 1 << 30},
		{2 << 30, 2 << 30},
	} {
		if got := roundSize(c.in); got != c.want {
			t.Errorf("roundSize(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

// fakeLoop maps backing files to made-up device names.
type fakeLoop struct {
	devs      map[string]string
	refreshed []string
}

func (f *fakeLoop) Find(file string) (string, error) { return f.devs[file], nil }
func (f *fakeLoop) Attach(file string) (string, error) {
	if d := f.devs[file]; d != "" {
		return d, nil
	}
	d := fmt.Sprintf("/dev/loop%d", len(f.devs)+10)
	f.devs[file] = d
	return d, nil
}
func (f *fakeLoop) Refresh(dev string) error { f.refreshed = append(f.refreshed, dev); return nil }
func (f *fakeLoop) Detach(dev string) error {
	for k, v := range f.devs {
		if v == dev {
			delete(f.devs, k)
		}
	}
	return nil
}

func TestProvisionExpandDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	yes := true
	class := "expandable"
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          "test/loop",
		VolumeBindingMode:    &wffc,
		AllowVolumeExpansion: &yes,
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1",
			Annotations: map[string]string{annSelectedNode: "node1"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("100Mi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	client := fake.NewClientset(sc, pvc)
	cl := fakeClients(client)
	dir := t.TempDir()
	loop := &fakeLoop{devs: map[string]string{}}
	p := newProvisioner(cl, "test/loop", "node1", dir, loop, copyImages{})
	cl.start(ctx)
	go p.Run(ctx)

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var pv *corev1.PersistentVolume
	waitFor("volume", func() bool {
		var err error
		pv, err = client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
		return err == nil
	})
	file := filepath.Join(dir, "pvc-u1.img")
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "300Mi" {
		t.Errorf("capacity %s, want 300Mi (XFS minimum)", got.String())
	}
	if pv.Spec.Local == nil || pv.Spec.Local.Path != loop.devs[file] || *pv.Spec.Local.FSType != "xfs" {
		t.Errorf("local source %+v, want %s with xfs", pv.Spec.Local, loop.devs[file])
	}
	if st, err := os.Stat(file); err != nil || st.Size() != 300<<20 {
		t.Fatalf("backing file: %v %v", st, err)
	}
	if r := pv.Spec.ClaimRef; r == nil || r.UID != "u1" || r.Name != "data" {
		t.Errorf("claimRef %+v", r)
	}

	// Bind, then ask for more.
	pvc, _ = client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
	pvc.Spec.VolumeName = "pvc-u1"
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("300Mi")}
	if _, err := client.CoreV1().PersistentVolumeClaims("ns").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("node resize pending", func() bool {
		c, _ := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
		return c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizePending
	})
	pv, _ = client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "2Gi" {
		t.Errorf("capacity after expansion %s, want 2Gi", got.String())
	}
	// The claim's update can be seen more than once; growing is idempotent, so the device
	// may be refreshed again, but only the claim's own device.
	if st, _ := os.Stat(file); st.Size() != 2<<30 || len(loop.refreshed) == 0 {
		t.Errorf("file size %d, refreshed %v", st.Size(), loop.refreshed)
	}
	for _, d := range loop.refreshed {
		if d != loop.devs[file] {
			t.Errorf("refreshed %s, want only %s", d, loop.devs[file])
		}
	}

	// Release: the volume, its device and its file go.
	pv.Status.Phase = corev1.VolumeReleased
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	if _, err := client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("deletion", func() bool {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
		return err != nil
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("backing file still there: %v", err)
	}
	if len(loop.devs) != 0 {
		t.Errorf("devices still attached: %v", loop.devs)
	}
}
