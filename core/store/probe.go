package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
)

// ProbeStep is one step of the start-up probe, in the order they run.
type ProbeStep int

const (
	// ProbeCreate is a create-only write of a fresh key; it must apply.
	ProbeCreate ProbeStep = iota + 1
	// ProbeRecreate is a second create-only write; it must be rejected.
	ProbeRecreate
	// ProbeSwap writes with the current version; it must apply.
	ProbeSwap
	// ProbeStaleSwap writes with the first, now stale, version; it must be
	// rejected and leave the object alone.
	ProbeStaleSwap
	// ProbeDelete removes the probe key.
	ProbeDelete
)

func (s ProbeStep) String() string {
	switch s {
	case ProbeCreate:
		return "create-only"
	case ProbeRecreate:
		return "create-only again"
	case ProbeSwap:
		return "put with the current version"
	case ProbeStaleSwap:
		return "put with a stale version"
	case ProbeDelete:
		return "delete"
	default:
		return fmt.Sprintf("step %d", int(s))
	}
}

// ProbeError says which probe step failed and why. Err is the store's
// error when the step failed with one (nil when the store wrongly
// succeeded); Cleanup is set when the probe key could not be removed.
type ProbeError struct {
	Step    ProbeStep
	Key     string
	Reason  string
	Err     error
	Cleanup error
}

func (e *ProbeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bucket probe failed at step %d (%s): %s", int(e.Step), e.Step, e.Reason)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Cleanup != nil {
		fmt.Fprintf(&b, " (and the probe key %s could not be removed: %v)", e.Key, e.Cleanup)
	}
	return b.String()
}

// Unwrap exposes the store's error and the clean-up error to errors.Is/As.
func (e *ProbeError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Err, e.Cleanup} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ProbeResult describes a probe that ran.
type ProbeResult struct {
	Key   string
	Steps []ProbeStepResult // the steps that ran, in order
}

// ProbeStepResult is the timing of one step.
type ProbeStepResult struct {
	Step    ProbeStep
	Elapsed time.Duration
}

// Prober runs celld's start-up probe: the check every node makes before it
// trusts a bucket with leases and ownership records. The zero value is
// ready to use.
type Prober struct {
	// Clock supplies the <nanos> part of the key and the step timings
	// (default: the real clock).
	Clock clock.Clock
	// Random supplies the key's random suffix (default: crypto/rand).
	Random func() uint64
	// Tag names the prober in the key, e.g. a node id (default "cellb").
	// It must be usable inside one key segment.
	Tag string
}

// ProbeRequests is what a probe that passes costs: four conditional PUTs of
// a body under 100 bytes, one GET and one DELETE. A failing probe makes
// fewer, plus a DELETE of its key when it may have written it.
const ProbeRequests = 6

// probeCleanupTimeout bounds the delete that removes a failed probe's key,
// matching celld's per-request timeout.
const probeCleanupTimeout = 15 * time.Second

// Probe runs the start-up probe with default settings; see Prober.
func Probe(ctx context.Context, s Store) error {
	_, err := Prober{}.Run(ctx, s)
	return err
}

// Run writes a fresh key probe/cas-<nanos>-<tag>-<016x random> and checks,
// in order, that create-only applies once and is then rejected, that a
// write with the current version applies and one with a stale version is
// rejected, and that the key can be deleted. A failure returns a
// *ProbeError naming the step; the key is deleted even then when possible.
func (p Prober) Run(ctx context.Context, s Store) (ProbeResult, error) {
	clk := clock.Or(p.Clock)
	random := p.Random
	if random == nil {
		random = cryptoUint64
	}
	tag := p.Tag
	if tag == "" {
		tag = "cellb"
	}
	key := layout.ProbeKey(clk.Now().UnixNano(), tag, random())
	if strings.Contains(tag, "/") {
		return ProbeResult{}, &OpError{Op: "probe", Key: key, Err: fmt.Errorf("%w: probe tag %q contains '/'", ErrInvalidKey, tag)}
	}
	if err := ValidateKey(key); err != nil {
		return ProbeResult{}, err
	}

	res := ProbeResult{Key: key}
	run := &probeRun{ctx: ctx, s: s, clk: clk, key: key, res: &res}
	err := run.steps()
	if err != nil && run.mayExist {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeCleanupTimeout)
		defer cancel()
		if derr := s.Delete(cctx, key); derr != nil {
			var pe *ProbeError
			if errors.As(err, &pe) {
				pe.Cleanup = derr
			}
		}
	}
	return res, err
}

type probeRun struct {
	ctx      context.Context
	s        Store
	clk      clock.Clock
	key      string
	res      *ProbeResult
	mayExist bool // the probe may have written the key
}

func (r *probeRun) fail(step ProbeStep, reason string, err error) error {
	return &ProbeError{Step: step, Key: r.key, Reason: reason, Err: err}
}

// timed runs one step and records how long it took.
func (r *probeRun) timed(step ProbeStep, f func() error) error {
	start := r.clk.Now()
	err := f()
	r.res.Steps = append(r.res.Steps, ProbeStepResult{Step: step, Elapsed: r.clk.Now().Sub(start)})
	return err
}

func (r *probeRun) steps() error {
	body := func(n int) []byte { return fmt.Appendf(nil, "cellb probe %s body %d\n", r.key, n) }
	var first, second Version

	err := r.timed(ProbeCreate, func() error {
		r.mayExist = true
		v, err := r.s.Put(r.ctx, r.key, body(1), PutOptions{Condition: IfAbsent})
		switch {
		case IsPreconditionFailed(err):
			r.mayExist = false
			return r.fail(ProbeCreate, "a create-only write of a fresh key was rejected as if the key existed", err)
		case err != nil:
			r.mayExist = IsAmbiguous(err)
			return r.fail(ProbeCreate, "the create-only write failed", err)
		case v == "":
			return r.fail(ProbeCreate, "the store returned an empty version for a new object", nil)
		}
		first = v
		return nil
	})
	if err != nil {
		return err
	}

	err = r.timed(ProbeRecreate, func() error {
		_, err := r.s.Put(r.ctx, r.key, body(2), PutOptions{Condition: IfAbsent})
		switch {
		case err == nil:
			return r.fail(ProbeRecreate, "the bucket ignores If-None-Match: * (a second create-only write of the same key was applied)", nil)
		case !IsPreconditionFailed(err):
			return r.fail(ProbeRecreate, "a second create-only write failed without a clean precondition rejection", err)
		}
		return nil
	})
	if err != nil {
		return err
	}

	err = r.timed(ProbeSwap, func() error {
		v, err := r.s.Put(r.ctx, r.key, body(3), PutOptions{Condition: IfVersion(first)})
		switch {
		case IsPreconditionFailed(err):
			return r.fail(ProbeSwap, "the bucket rejected a write conditioned on the version it had just returned", err)
		case err != nil:
			return r.fail(ProbeSwap, "the write with the current version failed", err)
		case v == "":
			return r.fail(ProbeSwap, "the store returned an empty version for a replaced object", nil)
		case v == first:
			return r.fail(ProbeSwap, "the store returned the same version for different contents, so compare-and-swap cannot tell the writes apart", nil)
		}
		second = v
		return nil
	})
	if err != nil {
		return err
	}

	err = r.timed(ProbeStaleSwap, func() error {
		_, err := r.s.Put(r.ctx, r.key, body(4), PutOptions{Condition: IfVersion(first)})
		switch {
		case err == nil:
			return r.fail(ProbeStaleSwap, "the bucket ignores If-Match (a write with a stale version was applied)", nil)
		case !IsPreconditionFailed(err):
			return r.fail(ProbeStaleSwap, "the write with a stale version failed without a clean precondition rejection", err)
		}
		o, err := r.s.Get(r.ctx, r.key)
		switch {
		case err != nil:
			return r.fail(ProbeStaleSwap, "reading the probe key back failed", err)
		case !bytes.Equal(o.Data, body(3)) || o.Version != second:
			return r.fail(ProbeStaleSwap, "the object read back is not the last write that applied (a write reported as rejected changed it, or reads are stale)", nil)
		}
		return nil
	})
	if err != nil {
		return err
	}

	return r.timed(ProbeDelete, func() error {
		if err := r.s.Delete(r.ctx, r.key); err != nil {
			return r.fail(ProbeDelete, "deleting the probe key failed", err)
		}
		r.mayExist = false
		return nil
	})
}

func cryptoUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return binary.LittleEndian.Uint64(b[:])
}
