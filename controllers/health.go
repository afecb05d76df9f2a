package controllers

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// API server outages.
//
// client-go's reflector (tools/cache/reflector.go, v0.37.2) retries a
// list or watch refused by an unreachable API server after an
// exponential backoff: 0.8 s doubling to a 30 s cap, each delay
// stretched by up to 2x of jitter, reset only after 2 minutes without a
// failure, and logged at V(4) only. After an outage of 30 s an informer
// is then asleep for tens of seconds more while the API server is back,
// and the controller acts on a stale cache without a word. Neither
// client-go's informer nor controller-runtime's cache options expose that
// backoff, but controller-runtime lets us build the informers
// (cache.Options.NewInformer): RecoveringInformer wraps their
// ListerWatcher so a list or watch refused for unreachability is retried
// inside the call every apiRetryMax at most, and the reflector's backoff
// never grows. Other errors (429s, expired resource versions, forbidden)
// reach the reflector unchanged.

// apiRetryMin and apiRetryMax bound the retry interval of a list or
// watch while the API server is unreachable.
const (
	apiRetryMin = 250 * time.Millisecond
	apiRetryMax = 2 * time.Second
)

// APIReachability is what the informers saw of the API server: since
// when their lists and watches are refused (zero while they are not).
type APIReachability struct {
	mu      sync.Mutex
	since   time.Time
	lastErr error
}

// Unreachable reports since when the API server refuses the informers'
// requests, and the last error.
func (a *APIReachability) Unreachable() (time.Time, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.since, a.lastErr
}

func (a *APIReachability) failed(ctx context.Context, err error) {
	a.mu.Lock()
	first := a.since.IsZero()
	if first {
		a.since = time.Now()
	}
	a.lastErr = err
	a.mu.Unlock()
	if first {
		log.FromContext(ctx).Info("API server unreachable; retrying lists and watches", "every", apiRetryMax, "err", err.Error())
	}
}

func (a *APIReachability) succeeded(ctx context.Context) {
	a.mu.Lock()
	since := a.since
	a.since, a.lastErr = time.Time{}, nil
	a.mu.Unlock()
	if !since.IsZero() {
		log.FromContext(ctx).Info("API server reachable again", "after", time.Since(since).Round(10*time.Millisecond).String())
	}
}

// unreachable reports whether err says the API server is not there (the
// errors the reflector backs off on, minus 429s, which mean it is there
// and overloaded), rather than answering.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err)
}

// RecoveringInformer is a cache.Options.NewInformer: the shared informer
// client-go builds, over a ListerWatcher that retries while the API server
// is unreachable (see above) and reports it to reach.
func (a *APIReachability) RecoveringInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(&recoveringLW{inner: toolscache.ToListerWatcherWithContext(lw), reach: a}, obj, resync, indexers)
}

type recoveringLW struct {
	inner toolscache.ListerWatcherWithContext
	reach *APIReachability
}

func (l *recoveringLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *recoveringLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *recoveringLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return untilReachable(ctx, l.reach, func() (runtime.Object, error) { return l.inner.ListWithContext(ctx, opts) })
}

func (l *recoveringLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return untilReachable(ctx, l.reach, func() (watch.Interface, error) { return l.inner.WatchWithContext(ctx, opts) })
}

// untilReachable calls f until it returns something other than an
// unreachable API server, or ctx ends (then f's last error is returned).
func untilReachable[T any](ctx context.Context, reach *APIReachability, f func() (T, error)) (T, error) {
	wait := apiRetryMin
	for {
		v, err := f()
		if err == nil || !unreachable(err) {
			if err == nil {
				reach.succeeded(ctx)
			}
			return v, err
		}
		reach.failed(ctx, err)
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, apiRetryMax)
	}
}

// apiProbeTimeout bounds the readiness probe's request.
const apiProbeTimeout = 2 * time.Second

// APIServerCheck is the controller's readiness check: it fails while the
// API server does not answer a cheap request (GET /version) within
// apiProbeTimeout, or while the informers' lists and watches are refused,
// so an outage shows in /readyz while it lasts.
func APIServerCheck(cfg *rest.Config, reach *APIReachability) (healthz.Checker, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = apiProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, err
	}
	return func(*http.Request) error {
		if since, err := reach.Unreachable(); !since.IsZero() {
			return fmt.Errorf("API server unreachable for %s: %v", time.Since(since).Round(time.Second), err)
		}
		if _, err := dc.ServerVersion(); err != nil {
			return fmt.Errorf("API server does not answer: %w", err)
		}
		return nil
	}, nil
}
