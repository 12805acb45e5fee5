package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Binaries are the three controllers, in the order the benchmarks print them.
var Binaries = []string{"volume-controller", "workload-controller", "topology-controller"}

// StartImage is the --start-image the workload controller needs outside a pod.
const StartImage = "valkey.local/workload-controller:dev"

// Build builds the three binaries into dir (one go command: one compile of what they share),
// and their memory floor (cmd/cachefloor) under each controller's name in
// FloorDir(dir).
func Build(repoRoot, dir string) error {
	args := []string{"build", "-o", dir + "/"}
	for _, name := range Binaries {
		args = append(args, "./cmd/"+name)
	}
	args = append(args, "./cmd/cachefloor")
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	if err := os.MkdirAll(FloorDir(dir), 0o755); err != nil {
		return err
	}
	for _, name := range Binaries {
		if err := os.Symlink(filepath.Join(dir, "cachefloor"), filepath.Join(FloorDir(dir), name)); err != nil {
			return err
		}
	}
	return nil
}

// FloorDir is where Build puts the memory floor of each binary of dir: cachefloor, named
// as that binary (its caches, no controller).
func FloorDir(dir string) string { return filepath.Join(dir, "floor") }

// Controller is one controller binary running as a process with its own metrics and health
// endpoints on loopback.
type Controller struct {
	Name    string
	Metrics string // host:port of the metrics endpoint
	Pprof   string // host:port of the /debug/pprof endpoints
	cmd     *exec.Cmd
	logs    *strings.Builder
	done    chan error
	// exit is how the process ended, once Stop returned.
	exit error
}

// Launch is how the binaries are started: from Dir, against the API server of Kubeconfig.
type Launch struct {
	Dir, Kubeconfig string
	// KubeconfigEnv passes the kubeconfig as $KUBECONFIG instead of --kubeconfig. The
	// binaries then load it through controller-runtime, whose default client rate (20 QPS,
	// burst 30) is also the one of in-cluster configuration; --kubeconfig leaves client-go's
	// 5 QPS, burst 10.
	KubeconfigEnv bool
	// GOGC is the binaries' $GOGC; empty leaves them their own pace.
	GOGC string
}

// StartController starts binary name without leader election and waits until it reports
// ready.
func StartController(l Launch, name string) (*Controller, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	health, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pprof, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--leader-elect=false", "--log-level=error",
		"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health, "--pprof-bind-address=" + pprof}
	env := append(os.Environ(), "POD_NAME=", "POD_NAMESPACE=", "KUBECONFIG=")
	if l.GOGC != "" {
		env = append(env, "GOGC="+l.GOGC)
	}
	if l.KubeconfigEnv {
		env = append(env, "KUBECONFIG="+l.Kubeconfig)
	} else {
		args = append(args, "--kubeconfig="+l.Kubeconfig)
	}
	switch name {
	case "workload-controller":
		args = append(args, "--start-image="+StartImage)
	case "topology-controller":
		// Sharded, as deployed: one replica holds every partition Lease.
		args = append(args, "--partition-namespace=default")
	}
	c := &Controller{Name: name, Metrics: metrics, Pprof: pprof, logs: &strings.Builder{}, done: make(chan error, 1)}
	c.cmd = exec.Command(filepath.Join(l.Dir, name), args...)
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	if err := c.waitReady("http://"+health+"/readyz", 60*time.Second); err != nil {
		c.Stop()
		return nil, fmt.Errorf("%s: %w\nlogs:\n%s", name, err, c.logs)
	}
	return c, nil
}

// StartAll starts the three controllers and waits for the topology controller to hold its
// partitions; on an error it stops those already started.
func StartAll(l Launch) ([]*Controller, error) { return StartReplicas(l, 1) }

// StartReplicas is StartAll with topologyReplicas replicas of the topology controller
// (each its own process and identity), sharing its partitions.
func StartReplicas(l Launch, topologyReplicas int) ([]*Controller, error) {
	var cs []*Controller
	for _, name := range Binaries {
		n := 1
		if name == "topology-controller" {
			n = topologyReplicas
		}
		for range n {
			c, err := StartController(l, name)
			if err != nil {
				StopAll(cs)
				return nil, err
			}
			cs = append(cs, c)
		}
	}
	if err := WaitPartitions(cs, time.Minute); err != nil {
		StopAll(cs)
		return nil, err
	}
	return cs, nil
}

// StopAll stops every controller of cs.
func StopAll(cs []*Controller) {
	for _, c := range cs {
		c.Stop()
	}
}

// Pid is the controller's process ID.
func (c *Controller) Pid() int { return c.cmd.Process.Pid }

// Stop sends SIGTERM and waits for the process to end (SIGKILL after 20 s).
func (c *Controller) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case c.exit = <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		c.exit = <-c.done
	}
}

// waitReady polls url until it answers 200, the process ends, or timeout passes.
func (c *Controller) waitReady(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if resp, err := http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: status %d", url, resp.StatusCode)
		} else {
			last = err
		}
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("exited: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", timeout, last)
		case <-tick.C:
		}
	}
}

// SaveHeapProfile writes the controller's heap profile (go tool pprof reads it) to path,
// after a garbage collection: what is live at that moment, not at the last cycle, which may
// have run in the middle of reconciles.
func (c *Controller) SaveHeapProfile(path string) error {
	return SaveProfile(http.DefaultClient, "http://"+c.Pprof+"/debug/pprof/heap?gc=1", path)
}

// SaveCPUProfile writes the controller's CPU profile over the next d to path.
func (c *Controller) SaveCPUProfile(path string, d time.Duration) error {
	return SaveProfile(http.DefaultClient, CPUProfileURL("http://"+c.Pprof, d), path)
}

// CPUProfileURL is the address of the CPU profile over d of the pprof endpoints at base.
func CPUProfileURL(base string, d time.Duration) string {
	return fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(1, int(d.Seconds())))
}

// SaveProfile writes the profile served at url to path.
func SaveProfile(hc *http.Client, url, path string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Logs is what the controller printed so far.
func (c *Controller) Logs() string { return c.logs.String() }

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// TopologyPartitions is the topology controller's partition count as the benchmarks run it
// (its default).
const TopologyPartitions = 8

// WaitPartitions waits until the topology replicas of cs hold every partition between them,
// each at least its share rounded down (at most timeout): a controller just started holds
// none, and a cluster created before would wait for the first Lease.
func WaitPartitions(cs []*Controller, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		held, least, replicas, err := partitionsHeld(cs)
		if err != nil {
			return err
		}
		if replicas > 0 && held == TopologyPartitions && least >= TopologyPartitions/replicas {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d topology replicas hold %d of %d partitions after %s", replicas, held, TopologyPartitions, timeout)
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of the metrics endpoints
	}
}

// partitionsHeld sums the partitions the topology replicas of cs hold, and the fewest one
// holds.
func partitionsHeld(cs []*Controller) (held, least, replicas int, err error) {
	least = TopologyPartitions
	for _, c := range cs {
		if c.Name != "topology-controller" {
			continue
		}
		s, err := c.Scrape()
		if err != nil {
			return 0, 0, 0, err
		}
		n := int(s.PartitionsHeld)
		held, least, replicas = held+n, min(least, n), replicas+1
	}
	return held, least, replicas, nil
}
