package tests

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellb/cellb/core/driver"
	"github.com/cellb/cellb/core/durability"
	"github.com/cellb/cellb/core/ltx"
	"github.com/cellb/cellb/core/ltxlog"
	"github.com/cellb/cellb/core/store/faultstore"
	"github.com/cellb/cellb/core/store/memstore"
	"github.com/cellb/cellb/drivers/modernc"
	"github.com/cellb/cellb/drivers/wasm"
)

// allDrivers is every driver this build has: cgo's only with cgo
// (driver_cgo_test.go).
func allDrivers() []driver.Driver {
	return append([]driver.Driver{wasm.New(), modernc.New(modernc.Options{})}, cgoTestDrivers()...)
}

// sqlStep runs one random step of a workload: a transaction of inserts,
// updates, deletes and blobs larger than a page, a schema change, a VACUUM,
// or a mass delete that makes the database shrink.
func sqlStep(ctx context.Context, c driver.Conn, r *rand.Rand) error {
	exec := func(sql string, args ...any) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	}
	switch k := r.IntN(20); {
	case k == 0:
		return exec("VACUUM")
	case k == 1:
		if err := exec("DELETE FROM t WHERE id % 5 != 0"); err != nil {
			return err
		}
		return exec("VACUUM")
	case k == 2:
		return exec(fmt.Sprintf("CREATE TABLE IF NOT EXISTS extra%d(x)", r.IntN(3)))
	case k == 3:
		return exec(fmt.Sprintf("DROP TABLE IF EXISTS extra%d", r.IntN(3)))
	default:
		if err := c.Begin(ctx); err != nil {
			return err
		}
		for i := 0; i < 1+r.IntN(20); i++ {
			var err error
			switch r.IntN(4) {
			case 0:
				blob := make([]byte, r.IntN(9000))
				for j := range blob {
					blob[j] = byte(r.Uint32())
				}
				err = exec("INSERT INTO t(v, b) VALUES (?, ?)", r.Int64(), blob)
			case 1:
				err = exec("UPDATE t SET v = v + 1 WHERE id % 7 = ?", r.IntN(7))
			case 2:
				err = exec("DELETE FROM t WHERE id % 11 = ?", r.IntN(11))
			default:
				err = exec("INSERT INTO t(v) VALUES (?)", r.Int64())
			}
			if err != nil {
				_ = c.Rollback(ctx)
				return err
			}
		}
		if r.IntN(10) == 0 {
			return c.Rollback(ctx)
		}
		return c.Commit(ctx)
	}
}

// feed hands what the last step committed to the log, as the runtime does.
func feed(ctx context.Context, c driver.Conn, cl durability.CellLog, capture bool) ([]durability.Durable, error) {
	if capture {
		commits, err := c.(driver.PageCapturer).TakeCommits(ctx)
		if err != nil {
			return nil, err
		}
		var out []durability.Durable
		for i := range commits {
			out = append(out, cl.Append(durability.Commit{Pages: &commits[i]}))
		}
		return out, nil
	}
	img, err := c.Serialize(ctx)
	if err != nil {
		return nil, err
	}
	return []durability.Durable{cl.Append(durability.Commit{Image: img})}, nil
}

// TestRestoredImageEqualsLiveImage: random workloads on every driver, with
// and without page capture; after every acknowledged commit, the image
// restored from the bucket alone equals the live image byte for byte.
func TestRestoredImageEqualsLiveImage(t *testing.T) {
	for _, d := range allDrivers() {
		for _, capture := range []bool{true, false} {
			if capture && !d.Capabilities().PageCapture {
				continue
			}
			t.Run(fmt.Sprintf("%s/capture=%v", d.Name(), capture), func(t *testing.T) {
				ctx := context.Background()
				conn, err := d.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "c.db"), PageCapture: capture})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.Exec(ctx, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, b BLOB)"); err != nil {
					t.Fatal(err)
				}
				s := memstore.New()
				lg, _ := ltxlog.New(ltxlog.Options{Store: s, CompactAfter: 8, Logger: quietLogger()})
				cl, err := lg.Open(ctx, openReq("Prop:x", 1, conn, false))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close(ctx, true)
				r := rand.New(rand.NewPCG(uint64(len(d.Name())), 42))
				uploaded := 0
				for i := 0; i < 60; i++ {
					if err := sqlStep(ctx, conn, r); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					futures, err := feed(ctx, conn, cl, capture)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range futures {
						<-f.Done()
						if f.Err() != nil {
							t.Fatal(f.Err())
						}
					}
					uploaded += len(futures)
					if uploaded == 0 {
						continue // nothing committed yet (a rollback)
					}
					live, err := conn.Serialize(ctx)
					if err != nil {
						t.Fatal(err)
					}
					res, err := ltxlog.Restore(ctx, s, "Prop:x", ltxlog.RestoreOptions{})
					if err != nil {
						t.Fatalf("step %d: restore: %v", i, err)
					}
					// The bucket carries page 1 in WAL mode, whatever the
					// driver's journal mode (ltx.WALHeaderPage).
					if len(live) >= 100 {
						live = append(ltx.WALHeaderPage(1, live[:100]), live[100:]...)
					}
					if !bytes.Equal(res.Image, live) {
						t.Fatalf("step %d: restored image (%d bytes, TXID %d) differs from the live image (%d bytes)", i, len(res.Image), res.TXID, len(live))
					}
				}
			})
		}
	}
}

// TestFaultyBucketKeepsAcknowledgedCommits: the same with a bucket that
// fails and loses responses; after each break, a fresh database restores
// from the bucket and must hold every acknowledged commit (the rows
// acknowledged are all there), then continues under a new epoch.
func TestFaultyBucketKeepsAcknowledgedCommits(t *testing.T) {
	for _, d := range allDrivers() {
		t.Run(d.Name(), func(t *testing.T) {
			ctx := context.Background()
			fs := faultstore.New(memstore.New(), faultstore.Config{Seed: 7, PerOp: map[faultstore.Op]faultstore.Faults{
				faultstore.OpPut: {Fail: 0.1, Drop: 0.05, LoseResponse: 0.1},
			}})
			lg, _ := ltxlog.New(ltxlog.Options{Store: fs, UploadRetries: 1, RetryDelay: time.Millisecond, Logger: quietLogger()})
			var acked int64 // highest acknowledged counter value
			for epoch := uint64(1); epoch <= 6; epoch++ {
				conn, err := d.Open(ctx, driver.Config{Path: filepath.Join(t.TempDir(), "c.db"), PageCapture: d.Capabilities().PageCapture})
				if err != nil {
					t.Fatal(err)
				}
				cl, err := lg.Open(ctx, openReq("Prop:f", epoch, conn, true))
				if err != nil {
					conn.Close()
					continue
				}
				if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS n(v INTEGER)"); err != nil {
					t.Fatal(err)
				}
				var have int64
				rows, err := conn.Query(ctx, "SELECT coalesce(max(v), 0) FROM n")
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					have = rows.Values()[0].(int64)
				}
				rows.Close()
				if have < acked {
					t.Fatalf("epoch %d restored counter %d, but %d was acknowledged", epoch, have, acked)
				}
				for i := 0; i < 15; i++ {
					have++
					if _, err := conn.Exec(ctx, "INSERT INTO n VALUES (?)", have); err != nil {
						t.Fatal(err)
					}
					futures, err := feed(ctx, conn, cl, d.Capabilities().PageCapture)
					if err != nil {
						t.Fatal(err)
					}
					ok := true
					for _, f := range futures {
						<-f.Done()
						ok = ok && f.Err() == nil
					}
					if !ok {
						break
					}
					acked = have
				}
				_ = cl.Close(ctx, false)
				conn.Close()
			}
			if acked == 0 {
				t.Fatal("nothing was ever acknowledged: the faults are too heavy to test anything")
			}
		})
	}
}

// openReq is the request the runtime makes for conn: pages captured when
// conn was opened with capture, and what it captured so far taken and
// dropped first (it is in the log's base).
func openReq(cell string, epoch uint64, conn driver.Conn, restore bool) durability.OpenRequest {
	capture := false
	if pc, ok := conn.(driver.PageCapturer); ok {
		_, err := pc.TakeCommits(context.Background())
		capture = err == nil
	}
	return durability.OpenRequest{Cell: cell, Epoch: epoch, Conn: conn, Restore: restore, PagesCaptured: capture}
}
