// Package certs is the certificate arithmetic of tls.generate: a cluster's CA (NewCA, ten
// years), server certificates it signs (IssueServer, 90 days, renewed with a third left:
// DueForRenewal), and the checks of a certificate Secret a user or cert-manager provides
// (ParseBundle: every key present, the key matches, the chain reaches ca.crt, not expired;
// Uncovered: the names it does not cover).
//
// It is pure: no Kubernetes client, no Valkey connection, the time passed in. Which Secret
// holds what, when to issue and how servers reload are the topology controller's TLS
// concern (package servertls).
package certs
