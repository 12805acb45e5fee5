// Package volumecontroller is the volume controller (see docs/contract.md for what it owns).
package volumecontroller

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Name of the controller: its binary, leader election Lease and metrics prefix.
const Name = "volume-controller"

// Options are the controller's own settings (the binary fills them from flags).
type Options struct{}

// CacheOptions are the label filters of the controller's caches.
func CacheOptions() map[client.Object]cache.ByObject { return nil }

// SetupWithManager registers the controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error { return nil }
