package main

import (
	"context"
	"os"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestMain turns off the watch-list client feature: the snapshot informers (generated without
// the watch-list semantics check) would wait for a bookmark the fake clientset never sends.
func TestMain(m *testing.M) {
	_ = os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

// fakeClients are the fake API clients of a provisioner under test, with snapshot objects.
func fakeClients(client *fake.Clientset, snapObjects ...runtime.Object) clients {
	// The snapshot client module generates no NewClientset (it has no apply configurations).
	snaps := snapfake.NewSimpleClientset(snapObjects...) //nolint:staticcheck // the only constructor there is

	return clients{
		core: client, snaps: snaps,
		factory:      informers.NewSharedInformerFactory(client, 0),
		snapFactory:  snapinformers.NewSharedInformerFactory(snaps, 0),
		eventsSource: "loop-provisioner-test",
	}
}

// start starts the informers.
func (cl clients) start(ctx context.Context) {
	cl.factory.Start(ctx.Done())
	cl.snapFactory.Start(ctx.Done())
}

// copyImages copies images with cp, sparse (a test folder need not be XFS), and adopts nothing.
type copyImages struct{}

func (copyImages) Snapshot(_, file, dst string) error { return copyImages{}.Clone(file, dst) }
func (copyImages) Adopt(string, bool) error           { return nil }
func (copyImages) Clone(src, dst string) error        { return command("cp", "--sparse=always", src, dst) }
