package wake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cellb/cellb/core/clock"
	"github.com/cellb/cellb/core/layout"
	"github.com/cellb/cellb/core/store"
)

// ErrNotReady is returned by CheckReady (and so by Service.Run) for a
// bucket whose wake index Prepare has not made ready.
var ErrNotReady = errors.New("wake: the bucket's wake index is not ready (" + layout.WakeFormatKey + " is missing or says migrating)")

// LiveNodesError refuses to initialize the wake index while nodes are
// live: celld seeds the index only when no node can be writing cells.
type LiveNodesError struct {
	Nodes []string
}

func (e *LiveNodesError) Error() string {
	return fmt.Sprintf("wake: the bucket has no wake index yet and nodes are live (%s): stop every node, then start one to create it", strings.Join(e.Nodes, ", "))
}

// Prepare makes a bucket's wake index ready before this node joins the
// fleet, as celld's starters do (§7.3): a marked bucket is ready; an
// unmarked one without wake data is initialized — the migrating marker
// (create-only), one migration seed per cell so the waker visits every cell
// once and learns its alarm, then the final marker — but only while no node
// lease is live; a migration another starter left unfinished is finished.
// Unmarked wake data, or another format, stops startup with a
// *FormatBlockedError. Before its first write Prepare runs celld's start-up
// probe (store.Prober, store.ProbeRequests requests), so a bucket that
// ignores conditional writes is refused with the probe's *store.ProbeError
// and nothing written; a ready bucket costs no probe here (fleet.Join runs
// its own).
//
// Nodes of a fleet often start together. A starter that finds a live node
// lease reads the marker again before refusing: a node that prepares the
// index before it joins (every CellB node, every celld ≥ 0.5) is only live
// once the marker is final, so a marker that moved since this starter read
// it means another starter made the index ready (or is making it ready)
// under the rule, and this one goes on from the new marker. Only a live
// node while the marker stays as this starter last read it — a node that
// never prepared the index — stops startup with a *LiveNodesError.
func Prepare(ctx context.Context, s store.Store, clk clock.Clock) error {
	clk = clock.Or(clk)
	probed := false
	// probe runs celld's start-up probe once, before this starter's first
	// write: a bucket that ignores conditional writes is refused with the
	// probe's *store.ProbeError before the index is touched.
	probe := func() error {
		if probed {
			return nil
		}
		if _, err := (store.Prober{Clock: clk}).Run(ctx, s); err != nil {
			return err
		}
		probed = true
		return nil
	}
	for attempt := 0; attempt < 5; attempt++ {
		rec, ver, err := readFormat(ctx, s)
		if err != nil {
			return err
		}
		var found []string
		if rec == nil {
			if found, err = legacyFound(ctx, s); err != nil {
				return err
			}
		}
		action, err := CheckFormat(rec, found)
		if err != nil {
			if rec == nil {
				// A concurrent starter may have published its marker and
				// seeds while this one scanned: read the marker again.
				if again, _, rerr := readFormat(ctx, s); rerr == nil && again != nil {
					continue
				}
			}
			return err
		}
		switch action {
		case FormatReady:
			return nil
		case FormatInitialize:
			if moved, err := noLiveNodes(ctx, s, clk, ver); moved {
				continue
			} else if err != nil {
				return err
			}
			if err := probe(); err != nil {
				return err
			}
			ver, err = s.Put(ctx, layout.WakeFormatKey, FormatRecord{Format: Format, Migrating: true}.Encode(), store.PutOptions{Condition: store.IfAbsent})
			if store.IsPreconditionFailed(err) {
				continue // another starter is initializing: read its marker
			}
			if err != nil {
				return fmt.Errorf("wake: create %s: %w", layout.WakeFormatKey, err)
			}
		case FormatResume:
			if moved, err := noLiveNodes(ctx, s, clk, ver); moved {
				continue
			} else if err != nil {
				return err
			}
			if err := probe(); err != nil {
				return err
			}
		}
		if err := seedEveryCell(ctx, s); err != nil {
			return err
		}
		if moved, err := noLiveNodes(ctx, s, clk, ver); moved {
			continue
		} else if err != nil {
			return err
		}
		_, err = s.Put(ctx, layout.WakeFormatKey, FormatRecord{Format: Format}.Encode(), store.PutOptions{Condition: store.IfVersion(ver)})
		if err == nil || !store.IsPreconditionFailed(err) {
			return err
		}
		// Another starter finished first: read what it wrote.
	}
	return errors.New("wake: " + layout.WakeFormatKey + " keeps changing under this starter")
}

// noLiveNodes applies celld's rule — no node lease may be live while the
// index is initialized — for a starter that last read the marker at ver
// ("" when absent). When a lease is live but the marker has moved since,
// moved is true: another starter changed it, and this one must read it
// again rather than refuse.
func noLiveNodes(ctx context.Context, s store.Store, clk clock.Clock, ver store.Version) (moved bool, err error) {
	err = requireNoLiveNodes(ctx, s, clk)
	var live *LiveNodesError
	if !errors.As(err, &live) {
		return false, err
	}
	if _, now, rerr := readFormat(ctx, s); rerr == nil && now != ver {
		return true, nil
	}
	return false, err
}

// CheckReady reports ErrNotReady (or the *FormatBlockedError) unless the
// bucket's marker says format 2 and not migrating.
func CheckReady(ctx context.Context, s store.Store) error {
	rec, _, err := readFormat(ctx, s)
	if err != nil {
		return err
	}
	if rec == nil {
		return ErrNotReady
	}
	action, err := CheckFormat(rec, nil)
	if err != nil {
		return err
	}
	if action != FormatReady {
		return ErrNotReady
	}
	return nil
}

func readFormat(ctx context.Context, s store.Store) (*FormatRecord, store.Version, error) {
	obj, err := s.Get(ctx, layout.WakeFormatKey)
	if store.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("wake: read %s: %w", layout.WakeFormatKey, err)
	}
	rec, err := DecodeFormat(obj.Data)
	if err != nil {
		return nil, "", err
	}
	return &rec, obj.Version, nil
}

// legacyFound lists the legacy marker and the prefixes holding wake data
// that no marker accounts for.
func legacyFound(ctx context.Context, s store.Store) ([]string, error) {
	var found []string
	if _, err := s.Get(ctx, layout.WakeLegacyFormatKey); err == nil {
		found = append(found, layout.WakeLegacyFormatKey)
	} else if !store.IsNotFound(err) {
		return nil, err
	}
	for _, p := range layout.WakeUnmarkedDataPrefixes() {
		page, err := s.List(ctx, store.ListOptions{Prefix: p, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(page.Objects) > 0 {
			found = append(found, p)
		}
	}
	return found, nil
}

// requireNoLiveNodes refuses while any node lease is live.
func requireNoLiveNodes(ctx context.Context, s store.Store, clk clock.Clock) error {
	page, err := store.ListAll(ctx, s, store.ListOptions{Prefix: layout.NodesPrefix})
	if err != nil {
		return err
	}
	now := uint64(clk.Now().UnixMilli())
	var live []string
	for _, o := range page.Objects {
		obj, err := s.Get(ctx, o.Key)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		lease, err := layout.DecodeNodeLease(o.Key, obj.Data)
		if err != nil {
			// An unreadable lease may belong to a live node of another
			// build: do not seed under it.
			live = append(live, o.Key)
			continue
		}
		if lease.Live(now) {
			live = append(live, lease.Node)
		}
	}
	if len(live) > 0 {
		return &LiveNodesError{Nodes: live}
	}
	return nil
}

// seedEveryCell writes one migration seed per cells/<cell>/ prefix.
func seedEveryCell(ctx context.Context, s store.Store) error {
	token := ""
	for {
		page, err := s.List(ctx, store.ListOptions{Prefix: layout.CellsPrefix, Delimiter: "/", Token: token})
		if err != nil {
			return err
		}
		for _, p := range page.Prefixes {
			cellKey, ok := layout.CellOfPrefix(p)
			if !ok || cellKeyProblem(cellKey) != "" {
				continue
			}
			e := Entry{Cell: cellKey, MigrationSeed: true}
			if _, err := s.Put(ctx, e.Key(), e.Encode(), store.PutOptions{}); err != nil {
				return fmt.Errorf("wake: seed %s: %w", cellKey, err)
			}
		}
		if page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
}
