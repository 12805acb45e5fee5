// Package apiserver_test benchmarks the three controller binaries against a real API server
// (envtest): fan-out against a bare client, idle writes, and memory. Run: make bench-envtest.
package apiserver_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"valkey.io/operator/test/bench"
	"valkey.io/operator/test/envtest"
)

var (
	fanOutTimeout = flag.Duration("fanout-timeout", 20*time.Minute, "give up on a fan-out after this long")
	idleWindow    = flag.Duration("idle-window", time.Minute, "window of the idle and restart write counts")
	kubeconfigEnv = flag.Bool("kubeconfig-env", false, "pass the kubeconfig as $KUBECONFIG, not --kubeconfig "+
		"(controller-runtime's client rate, 20 QPS, as in a pod, instead of client-go's 5)")
	cpuProfiles   = flag.String("cpu-profiles", "", "folder where each fan-out saves CPU profiles of the API server and each controller, from the cluster's creation (none when empty)")
	cpuProfileFor = flag.Duration("cpu-profile-window", 5*time.Second, "how long the CPU profiles of -cpu-profiles cover")
	scale         = flag.Float64("scale", 1, "scale the shards and unrelated objects (a quick check of the benchmarks themselves)")
	controllerGC  = flag.String("controller-gogc", "", "$GOGC of the controllers and their floors (their own pace, 50, when empty): the memory a pace saves against the CPU it costs")
)

// server is an envtest API server with a client and an admin kubeconfig for the binaries.
type server struct {
	env        *envtest.Environment
	client     client.Client
	kubeconfig string
	// audit is the API server's log of writes (the breakdown by controller and resource).
	audit *bench.Audit
}

// startServer starts an API server with the benchmark's StorageClass and an audit log of
// writes; dir holds its kubeconfig and log.
func startServer(ctx context.Context, parent string) (*server, error) {
	dir, err := os.MkdirTemp(parent, "apiserver-")
	if err != nil {
		return nil, err
	}
	audit, flags, err := bench.NewAudit(dir)
	if err != nil {
		return nil, err
	}
	// envtest's service range is a /24: 254 ClusterIPs, fewer than BenchmarkScale's client
	// Services.
	flags["service-cluster-ip-range"] = "10.0.0.0/16"
	env, err := envtest.StartWith(flags)
	if err != nil {
		return nil, err
	}
	s := &server{env: env, audit: audit}
	if err := s.setUp(ctx, dir); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return s, nil
}

func (s *server) setUp(ctx context.Context, dir string) error {
	user, err := s.env.AddUser(ctrlenvtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "kubeconfig-")
	if err != nil {
		return err
	}
	s.kubeconfig = f.Name()
	if _, err := f.Write(kubeconfig); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The benchmark's own client is not rate limited: it measures the bare API server.
	cfg := rest.CopyConfig(s.env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	scheme, err := envtest.Scheme()
	if err != nil {
		return err
	}
	if s.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	return bench.CreateStorageClass(ctx, s.client)
}

// profileCPU starts CPU profiles of the API server and of each controller of cs over
// -cpu-profile-window, saved in -cpu-profiles with the names prefixed by what; wait returns
// once all are saved. Nothing is profiled without -cpu-profiles.
func (s *server) profileCPU(cs []*bench.Controller, what string) (wait func() error) {
	if *cpuProfiles == "" {
		return func() error { return nil }
	}
	var g errgroup.Group
	g.Go(func() error {
		hc, err := rest.HTTPClientFor(s.env.Config)
		if err != nil {
			return err
		}
		return bench.SaveProfile(hc, bench.CPUProfileURL(strings.TrimSuffix(s.env.Config.Host, "/"), *cpuProfileFor), filepath.Join(*cpuProfiles, what+"-kube-apiserver.cpu.pb.gz"))
	})
	for _, c := range cs {
		g.Go(func() error {
			return c.SaveCPUProfile(filepath.Join(*cpuProfiles, what+"-"+c.Name+".cpu.pb.gz"), *cpuProfileFor)
		})
	}
	return g.Wait
}

// launch is how the benchmarks start the binaries against s.
func (s *server) launch() bench.Launch {
	return bench.Launch{Dir: shared.binDir, Kubeconfig: s.kubeconfig, KubeconfigEnv: *kubeconfigEnv, GOGC: *controllerGC}
}

func (s *server) namespace(ctx context.Context, name string) error {
	return s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// shared is the state the benchmarks of one test binary share.
var shared struct {
	binDir string
	bare   *server
	// operator is the API server with the controllers running and a settled cluster of
	// operatorNodes nodes (nil before the first fan-out).
	operator      *operatorRun
	operatorNodes int
}

// TestMain builds the binaries once and stops whatever the benchmarks left running.
func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	code := func() int {
		dir, err := os.MkdirTemp("", "valkey-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		shared.binDir = dir
		if testing.Short() || flag.Lookup("test.bench").Value.String() == "" {
			return m.Run() // no benchmark selected: nothing to build
		}
		if err := bench.Build(filepath.Clean(envtest.RepoRoot()), dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stopAll()
		return m.Run()
	}()
	os.Exit(code)
}

func stopAll() {
	if shared.operator != nil {
		shared.operator.stop()
	}
	if shared.bare != nil {
		_ = shared.bare.env.Stop()
	}
}

// bareServer is the API server of the bare client's runs (no controller runs there).
func bareServer(b *testing.B) *server {
	b.Helper()
	if shared.bare == nil {
		s, err := startServer(context.Background(), shared.binDir)
		if err != nil {
			b.Fatal(err)
		}
		shared.bare = s
	}
	return shared.bare
}
