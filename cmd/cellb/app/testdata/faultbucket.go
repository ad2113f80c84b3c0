package main

// This file is not part of cellb. faultCellbBinary (faultbucket_test.go)
// builds a second cellb binary with `go build -overlay` that adds it to
// cellb's main package and registers its scheme in app.Options.Buckets,
// so the real `cellb serve` runs on a local-files bucket whose requests
// fail as a remote bucket's do.

import (
	"context"
	"strconv"
	"time"

	fsstore "github.com/cellb/cellb/adapters/fs"
	"github.com/cellb/cellb/core/store"
	"github.com/cellb/cellb/core/store/faultstore"
)

// registerFaultFile adds the faultfile scheme: faultfile:///dir is the
// files bucket at dir behind core/store/faultstore, with the faults its
// query names (probabilities per request; drop and lose apply to writes):
//
//	seed     the fault generator's seed
//	fail     fails before reaching the bucket, nothing applied
//	drop     a write lost on the way: nothing applied, told "ambiguous"
//	lose     a write applied whose answer was lost: told "ambiguous"
//	latency  added to every request (a Go duration), plus up to jitter
func registerFaultFile(m *store.URLMux) {
	m.Register(store.URLScheme{
		Name:   "faultfile",
		Dir:    true,
		Form:   "faultfile:///dir?seed=N&fail=P&drop=P&lose=P&latency=D&jitter=D",
		Params: []string{"seed", "fail", "drop", "lose", "latency", "jitter"},
		Opener: store.URLOpenerFunc(openFaultFile),
	})
}

func openFaultFile(_ context.Context, u *store.BucketURL) (store.Store, error) {
	var cfg faultstore.Config
	var err error
	num := func(name string, into *float64) {
		if v, ok := u.Query[name]; ok && err == nil {
			if *into, err = strconv.ParseFloat(v, 64); err != nil {
				err = u.Errorf("%s=%q: %v", name, v, err)
			}
		}
	}
	dur := func(name string, into *time.Duration) {
		if v, ok := u.Query[name]; ok && err == nil {
			if *into, err = time.ParseDuration(v); err != nil {
				err = u.Errorf("%s=%q: %v", name, v, err)
			}
		}
	}
	if v, ok := u.Query["seed"]; ok {
		if cfg.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, u.Errorf("seed=%q: %v", v, err)
		}
	}
	num("fail", &cfg.All.Fail)
	num("drop", &cfg.All.Drop)
	num("lose", &cfg.All.LoseResponse)
	dur("latency", &cfg.All.Latency)
	dur("jitter", &cfg.All.Jitter)
	if err != nil {
		return nil, err
	}
	inner, err := fsstore.Open(u.Dir)
	if err != nil {
		return nil, err
	}
	return faultstore.New(inner, cfg), nil
}
