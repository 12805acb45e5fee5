package workloadcontroller_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

var _ = Describe("Password", func() {
	It("reaches the server through its config: in no argument, command or env value, and not in the ConfigMap", func(ctx context.Context) {
		ns := newNamespace(ctx)
		const password = "s3cret-never-in-argv"
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-auth"},
			StringData: map[string]string{"password": password},
		})).To(Succeed())
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			inCluster(n)
			n.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "c-auth"}
		})
		sts := waitStatefulSet(ctx, n)
		pod := sts.Spec.Template.Spec
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				Expect(a).NotTo(ContainSubstring(password), "container %s", c.Name)
				Expect(a).NotTo(ContainSubstring("VALKEY_PASSWORD"), "container %s: $(VALKEY_PASSWORD) in argv expands to the password", c.Name)
				Expect(strings.ToLower(a)).NotTo(Or(ContainSubstring("requirepass"), ContainSubstring("masterauth")), "container %s", c.Name)
			}
			for _, e := range c.Env {
				Expect(e.Value).NotTo(ContainSubstring(password), "container %s env %s", c.Name, e.Name)
				if strings.Contains(e.Name, "PASSWORD") || strings.HasSuffix(e.Name, "_AUTH") {
					Expect(e.Value).To(BeEmpty(), "env %s", e.Name)
					Expect(e.ValueFrom.SecretKeyRef).NotTo(BeNil(), "env %s", e.Name)
					// A cluster node's server and probes use the operator's own user.
					Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("c-operator"))
				}
			}
		}
		for _, p := range []*corev1.Probe{pod.Containers[0].StartupProbe, pod.Containers[0].ReadinessProbe, pod.Containers[0].LivenessProbe} {
			Expect(p.Exec).To(BeNil(), "valkey-start answers the probes: no password on a command line")
		}
		Expect(pod.Containers[0].Command).To(ContainElements("--auth-file", "/run/valkey-auth/auth.conf"))
		Expect(volumeOf(sts, "auth").EmptyDir.Medium).To(Equal(corev1.StorageMediumMemory))
		Expect(mountPathOf(pod.Containers[0], "auth")).To(Equal("/run/valkey-auth"))

		conf := configMap(ctx, n)()
		Expect(conf).NotTo(ContainSubstring(password))
		Expect(conf).To(ContainSubstring("\ninclude \"/run/valkey-auth/auth.conf\"\n"))
		Expect(conf).NotTo(Or(ContainSubstring("requirepass"), ContainSubstring("masterauth")))
	})

	It("outside any cluster, without a password Secret, includes no auth file", func(ctx context.Context) {
		n := createNode(ctx, newNamespace(ctx), func(*valkeyv1.ValkeyNode) {})
		sts := waitStatefulSet(ctx, n)
		Expect(sts.Spec.Template.Spec.Containers[0].Command).NotTo(ContainElement("--auth-file"))
		Expect(configMap(ctx, n)()).NotTo(ContainSubstring("include"))
	})
})
