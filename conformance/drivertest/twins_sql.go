package drivertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// Twins of the plain SQL, authorizer, image and capability cases: each
// breaks one promise the way a driver's own wrapper code gets it wrong.

// BlankResult reports every Exec with a zero Result (a driver that never
// reads sqlite3_changes or sqlite3_last_insert_rowid).
func BlankResult(d driver.Driver) driver.Driver {
	return wrapDriver(d, "blank-result", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			_, err := c.Conn.Exec(ctx, sql, args...)
			return driver.Result{}, err
		}
	})
}

// TextAsBlob binds every Go string argument as a blob (sqlite3_bind_blob
// where sqlite3_bind_text belongs).
func TextAsBlob(d driver.Driver) driver.Driver {
	blobs := func(args []any) []any {
		out := make([]any, len(args))
		for i, a := range args {
			if s, ok := a.(string); ok {
				a = []byte(s)
			}
			out[i] = a
		}
		return out
	}
	return wrapDriver(d, "text-as-blob", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			return c.Conn.Exec(ctx, sql, blobs(args)...)
		}
		c.query = func(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
			return c.Conn.Query(ctx, sql, blobs(args)...)
		}
	})
}

// FirstStatementOnly runs only the first statement of a multi-statement
// Exec (sqlite3_prepare once, the tail ignored).
func FirstStatementOnly(d driver.Driver) driver.Driver {
	return wrapDriver(d, "first-statement-only", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			first, _, _ := strings.Cut(sql, ";")
			return c.Conn.Exec(ctx, first, args...)
		}
	})
}

// ClosedExecSucceeds lets Exec on a closed connection report success (a
// wrapper that checks for a nil handle and returns early without an
// error).
func ClosedExecSucceeds(d driver.Driver) driver.Driver {
	return wrapDriver(d, "closed-exec-succeeds", nil, func(c *twinConn) {
		closed := false
		c.close = func() error {
			closed = true
			return c.Conn.Close()
		}
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			if closed {
				return driver.Result{}, nil
			}
			return c.Conn.Exec(ctx, sql, args...)
		}
	})
}

// ExtendedCodeAsPrimary reports the extended result code as the primary
// one in every *driver.SQLiteError (sqlite3_extended_errcode where
// sqlite3_errcode belongs): a UNIQUE violation reads as 2067, not
// SQLITE_CONSTRAINT.
func ExtendedCodeAsPrimary(d driver.Driver) driver.Driver {
	swap := func(err error) error {
		var se *driver.SQLiteError
		if !errors.As(err, &se) {
			return err
		}
		cp := *se
		cp.Code = cp.ExtendedCode
		return &cp
	}
	return wrapDriver(d, "extended-code-as-primary", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			r, err := c.Conn.Exec(ctx, sql, args...)
			return r, swap(err)
		}
	})
}

// RollbackIsCommit ends a rolled-back transaction with COMMIT.
func RollbackIsCommit(d driver.Driver) driver.Driver {
	return wrapDriver(d, "rollback-is-commit", nil, func(c *twinConn) {
		c.rollback = func(ctx context.Context) error {
			if !c.Conn.InTransaction() {
				return nil
			}
			return c.Conn.Commit(ctx)
		}
	})
}

// rollbackTo matches a ROLLBACK TO statement.
var rollbackTo = regexp.MustCompile(`(?i)\bROLLBACK\s+(TRANSACTION\s+)?TO\b[^;]*;?`)

// IgnoreRollbackTo drops ROLLBACK TO statements: a failed nested
// transaction keeps its writes.
func IgnoreRollbackTo(d driver.Driver) driver.Driver {
	return wrapDriver(d, "ignore-rollback-to", nil, func(c *twinConn) {
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			sql = rollbackTo.ReplaceAllString(sql, "")
			if strings.TrimSpace(sql) == "" {
				return driver.Result{}, nil
			}
			return c.Conn.Exec(ctx, sql, args...)
		}
	})
}

// PageCountPlusOne counts one page too many (the size of the file with its
// lock-byte page, say).
func PageCountPlusOne(d driver.Driver) driver.Driver {
	return wrapDriver(d, "page-count-plus-one", nil, func(c *twinConn) {
		c.pageCount = func(ctx context.Context) (int64, error) {
			n, err := c.Conn.PageCount(ctx)
			return n + 1, err
		}
	})
}

// AcceptsGarbage reports every Restore as done, also one that failed.
func AcceptsGarbage(d driver.Driver) driver.Driver {
	return wrapDriver(d, "accepts-garbage", nil, func(c *twinConn) {
		c.restore = func(ctx context.Context, img []byte) error {
			c.Conn.Restore(ctx, img)
			return nil
		}
	})
}

// BumpsChangeCounter writes a new file change counter into every image it
// serializes (header bytes 24-27), so two images of the same database
// differ.
func BumpsChangeCounter(d driver.Driver) driver.Driver {
	return wrapDriver(d, "bumps-change-counter", nil, func(c *twinConn) {
		var n uint32
		c.serialize = func(ctx context.Context) ([]byte, error) {
			img, err := c.Conn.Serialize(ctx)
			if err != nil || len(img) < 100 {
				return img, err
			}
			n++
			binary.BigEndian.PutUint32(img[24:28], binary.BigEndian.Uint32(img[24:28])+n)
			return img, nil
		}
	})
}

// IgnoreAsAllow turns an authorizer's AuthIgnore into AuthOK, so a column
// the policy hides reads in full.
func IgnoreAsAllow(d driver.Driver) driver.Driver {
	return wrapDriver(d, "ignore-as-allow", nil, func(c *twinConn) {
		c.setAuthorizer = func(fn driver.Authorizer) error {
			if fn == nil {
				return c.Conn.SetAuthorizer(nil)
			}
			return c.Conn.SetAuthorizer(func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
				if r := fn(a, arg1, arg2, db, trig); r != driver.AuthIgnore {
					return r
				}
				return driver.AuthOK
			})
		}
	})
}

// SwappedAuthArgs hands the authorizer arg2 and arg1 the other way round.
func SwappedAuthArgs(d driver.Driver) driver.Driver {
	return wrapDriver(d, "swapped-auth-args", nil, func(c *twinConn) {
		c.setAuthorizer = func(fn driver.Authorizer) error {
			if fn == nil {
				return c.Conn.SetAuthorizer(nil)
			}
			return c.Conn.SetAuthorizer(func(a driver.Action, arg1, arg2, db, trig string) driver.AuthResult {
				return fn(a, arg2, arg1, db, trig)
			})
		}
	})
}

// CreatesMissingDirs creates the directories of a path that does not
// exist, instead of failing the open.
func CreatesMissingDirs(d driver.Driver) driver.Driver {
	td := wrapDriver(d, "creates-missing-dirs", nil, func(*twinConn) {}).(*twinDriver)
	td.beforeOpen = func(cfg driver.Config) {
		if cfg.Path != "" {
			os.MkdirAll(filepath.Dir(cfg.Path), 0o755)
		}
	}
	return td
}

// Misdeclared flips one capability the driver declares, leaving its
// connections as they are: a driver whose Capabilities do not say what
// its Conn does.
func Misdeclared(flip func(*driver.Capabilities), fault string) func(driver.Driver) driver.Driver {
	return func(d driver.Driver) driver.Driver {
		caps := d.Capabilities()
		flip(&caps)
		return wrapDriver(d, fault, &caps, func(*twinConn) {})
	}
}

// PassiveCheckpointOnly runs PASSIVE checkpoints and refuses every other
// mode (a driver that wraps sqlite3_wal_checkpoint, not its _v2). A twin
// that silently ran PASSIVE instead would pass on drivers whose WAL is no
// file (the wasm driver's): the only trace of a mode there is the WAL
// file TRUNCATE empties.
func PassiveCheckpointOnly(d driver.Driver) driver.Driver {
	return wrapDriver(d, "passive-checkpoint-only", nil, func(c *twinConn) {
		c.checkpoint = func(ctx context.Context, mode driver.CheckpointMode) error {
			cp, ok := c.Conn.(driver.Checkpointer)
			if !ok {
				return driver.ErrUnsupported
			}
			if mode != driver.CheckpointPassive {
				return fmt.Errorf("checkpoint mode %d: %w", mode, driver.ErrUnsupported)
			}
			return cp.Checkpoint(ctx, mode)
		}
	})
}

// StaleCounters never resets the statement counters of a statement run
// again (a driver that reads sqlite3_stmt_status without resetting it on
// a cached statement): each run of the same SQL text reports the rows
// read by every earlier run too.
func StaleCounters(d driver.Driver) driver.Driver {
	return wrapDriver(d, "stale-counters", nil, func(c *twinConn) {
		read := map[string]int64{}
		c.exec = func(ctx context.Context, sql string, args ...any) (driver.Result, error) {
			res, err := c.Conn.Exec(ctx, sql, args...)
			read[sql] += res.RowsRead
			res.RowsRead = read[sql]
			return res, err
		}
		c.query = func(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
			rows, err := c.Conn.Query(ctx, sql, args...)
			if err != nil {
				return nil, err
			}
			cr, ok := rows.(driver.CountedRows)
			if !ok {
				return rows, nil
			}
			return &staleCountRows{Rows: rows, cr: cr, before: read[sql], add: func(n int64) { read[sql] += n }}, nil
		}
	})
}

type staleCountRows struct {
	driver.Rows
	cr     driver.CountedRows
	before int64
	add    func(int64)
	added  bool
}

func (r *staleCountRows) Counters() (int64, int64) {
	read, written := r.cr.Counters()
	return r.before + read, written
}

func (r *staleCountRows) Close() error {
	if !r.added {
		r.added = true
		read, _ := r.cr.Counters()
		r.add(read)
	}
	return r.Rows.Close()
}
