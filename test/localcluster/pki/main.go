// Command pki writes the certificates, keys and kubeconfigs of the local test cluster.
//
//	go run ./test/localcluster/pki -dir .local/cluster -node vm -node-ip 10.87.0.1 \
//	  -extra-nodes vm-2=10.87.0.2,vm-3=10.87.0.3
//
// Each extra node (the kubelets of a multi-node cluster beyond the first) gets its own client
// and serving certificates (kubelet-<name>, kubelet-serving-<name>) and kubeconfig
// (kubelet-<name>.kubeconfig).
//
// It is idempotent: the CA, the service-account key and every certificate are kept when they
// exist and were made for the same node name and address (recorded in pki/params); otherwise
// the whole PKI is made anew. Kubeconfigs are rewritten on every run.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type cert struct {
	name   string
	cn     string
	orgs   []string
	server bool
	ips    []net.IP
	dns    []string
}

func main() {
	dir := flag.String("dir", "", "cluster state folder; PKI goes to <dir>/pki, kubeconfigs to <dir>")
	node := flag.String("node", "", "node name")
	nodeIP := flag.String("node-ip", "", "node address (API server and kubelet listen there)")
	serviceIP := flag.String("service-ip", "10.96.0.1", "ClusterIP of the kubernetes Service")
	port := flag.Int("port", 6443, "API server secure port")
	extra := flag.String("extra-nodes", "", "further kubelets: name=ip,name=ip")
	flag.Parse()
	nodes, err := parseNodes(*extra)
	if err != nil || *dir == "" || *node == "" || net.ParseIP(*nodeIP) == nil || net.ParseIP(*serviceIP) == nil {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dir, *node, net.ParseIP(*nodeIP), net.ParseIP(*serviceIP), *port, nodes); err != nil {
		fmt.Fprintln(os.Stderr, "pki:", err)
		os.Exit(1)
	}
}

// extraNode is a kubelet beyond the first: its node name and address.
type extraNode struct {
	name string
	ip   net.IP
}

// parseNodes reads "name=ip,name=ip".
func parseNodes(s string) ([]extraNode, error) {
	var nodes []extraNode
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		name, ip, ok := strings.Cut(item, "=")
		if !ok || name == "" || net.ParseIP(ip) == nil {
			return nil, fmt.Errorf("extra node %q: want name=ip", item)
		}
		nodes = append(nodes, extraNode{name: name, ip: net.ParseIP(ip)})
	}
	return nodes, nil
}

// kubeletCerts are the client and serving certificates of the kubelet of node at ip, named
// kubelet<suffix> and kubelet-serving<suffix>.
func kubeletCerts(suffix, node string, ip net.IP) []cert {
	return []cert{
		{name: "kubelet" + suffix, cn: "system:node:" + node, orgs: []string{"system:nodes"}},
		{name: "kubelet-serving" + suffix, cn: "system:node:" + node, orgs: []string{"system:nodes"}, server: true,
			ips: []net.IP{ip, net.IPv4(127, 0, 0, 1)}, dns: []string{node, "localhost"}},
	}
}

func run(dir, node string, nodeIP, serviceIP net.IP, port int, extra []extraNode) error {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	params := fmt.Sprintf("node=%s ip=%s service-ip=%s\n", node, nodeIP, serviceIP)
	if old, err := os.ReadFile(filepath.Join(pki, "params")); err != nil || string(old) != params {
		// Made for another node or never made: start over.
		entries, _ := os.ReadDir(pki)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(pki, e.Name()))
		}
	}
	caKey, caCert, err := loadOrMakeCA(pki)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(pki, "sa.key")); err != nil {
		k, err := newKey()
		if err != nil {
			return err
		}
		if err := writeKey(filepath.Join(pki, "sa.key"), k); err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(pki, "sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
			return err
		}
	}
	certs := []cert{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			ips: []net.IP{nodeIP, serviceIP, net.IPv4(127, 0, 0, 1)},
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "admin", cn: "admin", orgs: []string{"system:masters"}},
		{name: "kube-controller-manager", cn: "system:kube-controller-manager"},
		{name: "kube-scheduler", cn: "system:kube-scheduler"},
		{name: "kube-proxy", cn: "system:kube-proxy"},
	}
	certs = append(certs, kubeletCerts("", node, nodeIP)...)
	users := []string{"admin", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}
	for _, n := range extra {
		certs = append(certs, kubeletCerts("-"+n.name, n.name, n.ip)...)
		users = append(users, "kubelet-"+n.name)
	}
	for _, c := range certs {
		if _, err := os.Stat(filepath.Join(pki, c.name+".crt")); err == nil {
			continue
		}
		if err := makeCert(pki, c, caKey, caCert); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(pki, "params"), []byte(params), 0o644); err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s", net.JoinHostPort(nodeIP.String(), fmt.Sprint(port)))
	for _, user := range users {
		if err := writeKubeconfig(filepath.Join(dir, user+".kubeconfig"), server, pki, user); err != nil {
			return err
		}
	}
	return nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func loadOrMakeCA(pki string) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	keyFile, crtFile := filepath.Join(pki, "ca.key"), filepath.Join(pki, "ca.crt")
	if kb, err := os.ReadFile(keyFile); err == nil {
		cb, err := os.ReadFile(crtFile)
		if err != nil {
			return nil, nil, err
		}
		kp, _ := pem.Decode(kb)
		cp, _ := pem.Decode(cb)
		if kp == nil || cp == nil {
			return nil, nil, errors.New("ca.key or ca.crt is not PEM")
		}
		k, err := x509.ParseECPrivateKey(kp.Bytes)
		if err != nil {
			return nil, nil, err
		}
		c, err := x509.ParseCertificate(cp.Bytes)
		return k, c, err
	}
	k, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "valkey-operator-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyFile, k); err != nil {
		return nil, nil, err
	}
	if err := writePEM(crtFile, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return k, c, err
}

func makeCert(pki string, c cert, caKey *ecdsa.PrivateKey, ca *x509.Certificate) error {
	k, err := newKey()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: c.cn, Organization: c.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses:  c.ips,
		DNSNames:     c.dns,
	}
	if c.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(pki, c.name+".key"), k); err != nil {
		return err
	}
	return writePEM(filepath.Join(pki, c.name+".crt"), "CERTIFICATE", der, 0o644)
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func writeKubeconfig(path, server, pki, user string) error {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(pki, name))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(user + ".crt")
	if err != nil {
		return err
	}
	key, err := read(user + ".key")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: valkey-local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: valkey-local
  context:
    cluster: valkey-local
    user: %s
current-context: valkey-local
`, server, ca, user, crt, key, user)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
