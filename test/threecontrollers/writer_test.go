package threecontrollers_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// ackWriter writes keys through the cluster until halted, and counts a key as acknowledged
// only once WAIT 1 returned at least 1 on the connection that wrote it. A refused write is
// tried again.
type ackWriter struct {
	mu     sync.Mutex
	acked  []string
	failed int
	cancel context.CancelFunc
	done   chan struct{}
}

var errNotReplicated = errors.New("WAIT 1 returned 0")

// clusterClient is a cluster client of the running servers as the default user, with the
// password of the cluster's Secret.
func clusterClient(cluster string) valkey.Client {
	GinkgoHelper()
	var s corev1.Secret
	Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName(cluster)}, &s)).To(Succeed())
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: kube.addrs(), Password: string(s.Data[valkeyv1.DefaultPasswordKey]),
		DisableCache: true, ConnWriteTimeout: 3 * time.Second,
	})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func startAckWriter(cluster, prefix string) *ackWriter {
	vc := clusterClient(cluster)
	ctx, cancel := context.WithCancel(context.Background())
	w := &ackWriter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		defer vc.Close()
		for i := 0; ctx.Err() == nil; i++ {
			w.write(ctx, vc, prefix+":"+strconv.Itoa(i))
		}
	}()
	return w
}

// write tries key until a replica acknowledges it or the writer is halted.
func (w *ackWriter) write(ctx context.Context, vc valkey.Client, key string) {
	for ctx.Err() == nil {
		err := vc.Dedicated(func(d valkey.DedicatedClient) error {
			octx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			res := d.DoMulti(octx, d.B().Set().Key(key).Value(key).Build(), d.B().Wait().Numreplicas(1).Timeout(1000).Build())
			if err := res[0].Error(); err != nil {
				return err
			}
			if n, err := res[1].AsInt64(); err != nil || n < 1 {
				return errors.Join(err, errNotReplicated)
			}
			return nil
		})
		w.mu.Lock()
		if err == nil {
			w.acked = append(w.acked, key)
			w.mu.Unlock()
			return
		}
		w.failed++
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // pacing the retries of a refused write
		}
	}
}

// acknowledged are the keys acknowledged so far.
func (w *ackWriter) acknowledged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// halt stops the writer and returns the keys acknowledged.
func (w *ackWriter) halt() []string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// lost are the acknowledged keys the cluster does not hold (with their value) now.
func lost(cluster string, keys []string) []string {
	GinkgoHelper()
	vc := clusterClient(cluster)
	defer vc.Close()
	var out []string
	for _, key := range keys {
		v, err := vc.Do(context.Background(), vc.B().Get().Key(key).Build()).ToString()
		if err != nil || v != key {
			out = append(out, key)
		}
	}
	return out
}

// expectNoneLost halts w and checks that every key it had acknowledged is there.
func expectNoneLost(w *ackWriter, cluster, phase string) {
	GinkgoHelper()
	keys := w.halt()
	missing := lost(cluster, keys)
	AddReportEntry(phase, "acknowledged "+strconv.Itoa(len(keys))+", lost "+strconv.Itoa(len(missing)))
	Expect(keys).NotTo(BeEmpty(), "the writer acknowledged nothing during "+phase)
	Expect(missing).To(BeEmpty(), "acknowledged keys lost during "+phase)
}
