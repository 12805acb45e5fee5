// Package schedule is the topology controller's backup-schedule controller
// (topology-backup-schedule): it creates a ValkeyBackupSchedule's ValkeyBackups at its cron
// times (UTC, the most recent missed time only), skips a time while the cluster is missing
// or a backup of the schedule is still under way, deletes completed backups past the
// retention, and reports the schedule's Ready condition.
//
// It owns the ValkeyBackupSchedule status and creates ValkeyBackups labelled with the
// schedule's name and UID; it deletes only those that carry its UID and name its cluster
// (the backups have no owner, so the name label may be an earlier schedule's). It never
// touches a ValkeyCluster, a ValkeyNode or a Valkey server:
// running a backup is the backup concern's work, started by the cluster's reconcile.
// It keeps nothing in memory. The top-level package wires it into the manager behind the
// partition guard (setupSchedules); IndexByCluster, OfBackup, SchedulesOfCluster and Key
// are what that wiring needs.
package schedule
