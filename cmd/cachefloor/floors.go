package main

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller"
	"valkey.io/operator/volumecontroller"
	"valkey.io/operator/workloadcontroller"
)

// floor is one controller's caches: its cache filters and transforms, and the kinds its
// setup watches (For, Owns and Watches of its SetupWithManager; the volume controller's
// VolumeSnapshots, watched only where their API is installed, are left out).
type floor struct {
	cache   func() map[client.Object]cache.ByObject
	watches []client.Object
}

var floors = map[string]floor{
	volumecontroller.Name: {
		cache:   volumecontroller.CacheOptions,
		watches: []client.Object{&valkeyv1.ValkeyNode{}, &corev1.PersistentVolumeClaim{}, &storagev1.StorageClass{}},
	},
	workloadcontroller.Name: {
		cache: workloadcontroller.CacheOptions,
		watches: []client.Object{&valkeyv1.ValkeyNode{}, &appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.ConfigMap{},
			&networkingv1.NetworkPolicy{}, &corev1.Pod{}, &corev1.Event{}, &corev1.Node{}},
	},
	topologycontroller.Name: {
		cache: topologycontroller.CacheOptions,
		watches: []client.Object{&valkeyv1.ValkeyCluster{}, &valkeyv1.ValkeyNode{}, &policyv1.PodDisruptionBudget{},
			&networkingv1.NetworkPolicy{}, &corev1.Service{}, &valkeyv1.ValkeyBackup{}},
	},
}
