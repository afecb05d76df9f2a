package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/driver"
)

// Create expectations
//
// The reconciler reads pods from the informer cache, which lags the API
// server: a reconcile that follows the one creating a gang's pods (the
// status write and the pod creations themselves trigger it) can find some
// of them missing and create them again, for an AlreadyExists error each.
// The scale benchmark measured 0.37 such failed creates per pod. As the
// ReplicaSet controller does, the reconciler remembers which pods it
// created and does not create them again until the cache has seen them,
// or until createExpiry has passed (a pod created and deleted before the
// cache ever saw it is created again then).

// createExpiry bounds how long a created pod the cache has not shown yet
// holds back its re-creation.
const createExpiry = 30 * time.Second

// expectCreated records that the pods were created (or already existed).
func (r *Reconciler) expectCreated(key types.NamespacedName, pods []string, now time.Time) {
	if len(pods) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.created == nil {
		r.created = map[types.NamespacedName]map[string]time.Time{}
	}
	m := r.created[key]
	if m == nil {
		m = map[string]time.Time{}
		r.created[key] = m
	}
	for _, p := range pods {
		m[p] = now
	}
}

// notYetSeen drops from create the workers whose pods this process
// created less than createExpiry ago and the cache does not show yet,
// and forgets the pods the cache shows.
func (r *Reconciler) notYetSeen(key types.NamespacedName, cached []corev1.Pod, create []driver.Worker, now time.Time) []driver.Worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.created[key]
	if len(m) == 0 {
		return create
	}
	for i := range cached {
		delete(m, cached[i].Name)
	}
	out := create[:0:0]
	for _, w := range create {
		if at, ok := m[w.Pod]; ok && now.Sub(at) < createExpiry {
			continue
		}
		delete(m, w.Pod)
		out = append(out, w)
	}
	if len(m) == 0 {
		delete(r.created, key)
	}
	return out
}
