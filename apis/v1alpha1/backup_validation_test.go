package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

var _ = Describe("Backup and restore admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("accepts the backup sample (deploy/samples/valkeybackup.yaml) verbatim", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "samples", "valkeybackup.yaml"))
		Expect(err).NotTo(HaveOccurred())
		docs := strings.Split(string(b), "\n---\n")
		Expect(docs).To(HaveLen(3))
		for _, doc := range docs {
			Expect(k8s.Create(ctx, fromYAML(doc, ns))).To(Succeed())
		}
	})

	It("accepts restoreFrom at creation and refuses adding, removing or changing it later", func() {
		c := persistentCluster(ns)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		c.Spec.RestoreFrom = "nightly"
		expectRejected(k8s.Update(ctx, c), "restoreFrom is set only when the cluster is created")

		d := persistentCluster(ns)
		d.Spec.RestoreFrom = "nightly"
		Expect(k8s.Create(ctx, d)).To(Succeed())
		d.Spec.RestoreFrom = "weekly"
		expectRejected(k8s.Update(ctx, d), "restoreFrom is set only when the cluster is created")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.RestoreFrom = ""
		expectRejected(k8s.Update(ctx, d), "restoreFrom is set only when the cluster is created")
	})

	It("refuses restoreFrom without persistence", func() {
		c := persistentCluster(ns)
		c.Spec.Persistence = nil
		c.Spec.RestoreFrom = "nightly"
		expectRejected(k8s.Create(ctx, c), "restoreFrom requires persistence")
	})

	It("fixes a backup's spec at creation", func() {
		b := &valkeyv1.ValkeyBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "b-" + rand.String(5), Namespace: ns},
			Spec:       valkeyv1.ValkeyBackupSpec{ClusterName: "a"},
		}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		b.Spec.ClusterName = "b"
		expectRejected(k8s.Update(ctx, b), "a ValkeyBackup's spec is fixed at creation")
		b.Spec.ClusterName = ""
		expectRejected(k8s.Create(ctx, &valkeyv1.ValkeyBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "b-" + rand.String(5), Namespace: ns},
		}), "spec.clusterName")
	})

	It("refuses a backup name longer than a label value", func() {
		b := &valkeyv1.ValkeyBackup{
			ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("b", 64), Namespace: ns},
			Spec:       valkeyv1.ValkeyBackupSpec{ClusterName: "a"},
		}
		expectRejected(k8s.Create(ctx, b), "name may have at most 63 characters")
		b.Name = strings.Repeat("b", 63)
		Expect(k8s.Create(ctx, b)).To(Succeed())
	})

	It("refuses a schedule without five cron fields, a retention under 1, and a changed cluster", func() {
		schedule := func(cron string, retention int32) *valkeyv1.ValkeyBackupSchedule {
			return &valkeyv1.ValkeyBackupSchedule{
				ObjectMeta: metav1.ObjectMeta{Name: "s-" + rand.String(5), Namespace: ns},
				Spec:       valkeyv1.ValkeyBackupScheduleSpec{ClusterName: "a", Schedule: cron, Retention: retention},
			}
		}
		expectRejected(k8s.Create(ctx, schedule("0 3 * *", 2)), "schedule must have five fields")
		expectRejected(k8s.Create(ctx, schedule("0 3 * * * *", 2)), "schedule must have five fields")
		expectRejected(k8s.Create(ctx, schedule("0 3 * * ?", 2)), "schedule may hold only")
		expectRejected(k8s.Create(ctx, schedule("* * * * *", 0)), "spec.retention")
		long := schedule("* * * * *", 2)
		long.Name = strings.Repeat("s", valkeyv1.MaxScheduleNameLength+1)
		expectRejected(k8s.Create(ctx, long), "name may have at most 54 characters")
		long.Name = strings.Repeat("s", valkeyv1.MaxScheduleNameLength)
		Expect(k8s.Create(ctx, long)).To(Succeed())
		Expect(len(valkeyv1.ScheduledBackupName(long.Name, time.Now()))).To(BeNumerically("<=", valkeyv1.MaxLabelValueLength),
			"the backups of the longest schedule name fit a label value")
		s := schedule("*/5 * * * MON-FRI", 2)
		Expect(k8s.Create(ctx, s)).To(Succeed())
		s.Spec.ClusterName = "b"
		expectRejected(k8s.Update(ctx, s), "clusterName is fixed")
	})
})
