//go:build cgo

package cgo

// mattn/go-sqlite3 has no WAL hook, its commit hook calls into Go on every
// commit, and its authorizer hook drops SQLite's fourth argument (the
// trigger or view name). These hooks are registered here directly on the
// connection's sqlite3 handle. The three SQLite functions used are declared
// by hand below (the project carries no SQLite header); they resolve to the
// SQLite that mattn/go-sqlite3 links, whose symbols are global.

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct sqlite3 sqlite3;

int sqlite3_set_authorizer(sqlite3 *db,
	int (*xAuth)(void *, int, const char *, const char *, const char *, const char *),
	void *pUserData);
void *sqlite3_wal_hook(sqlite3 *db, int (*xHook)(void *, sqlite3 *, const char *, int), void *pArg);
void *sqlite3_commit_hook(sqlite3 *db, int (*xCallback)(void *), void *pArg);

// Defined in native_export.go.
extern int cellbAuthorize(uintptr_t conn, int action, char *arg1, char *arg2, char *db, char *trigger);

static int cellb_authorize(void *conn, int action, const char *a, const char *b, const char *db, const char *trigger) {
	return cellbAuthorize((uintptr_t)conn, action, (char *)a, (char *)b, (char *)db, (char *)trigger);
}

static int cellb_set_authorizer(sqlite3 *db, uintptr_t conn) {
	return sqlite3_set_authorizer(db, conn ? cellb_authorize : 0, (void *)conn);
}

// cellb_commits is what the commit and WAL hooks record for Go to read
// after the SQLite call returns: whether a commit happened, and how many
// frames the WAL held after the last commit that wrote some. Setting plain
// fields keeps every commit free of callbacks into Go.
typedef struct {
	int committed;
	int frames;
} cellb_commits;

// The commit hook runs before the commit writes its frames and the WAL
// hook after, so a commit the WAL hook does not report (one completed by
// resetting its statement) leaves frames at 0: "unknown, read to the end".
static int cellb_commit_hook(void *p) {
	((cellb_commits *)p)->committed = 1;
	((cellb_commits *)p)->frames = 0;
	return 0;
}

// The WAL hook also sees VACUUM, which commits without the commit hook.
static int cellb_wal_hook(void *p, sqlite3 *db, const char *zDb, int nFrame) {
	if (zDb[0] == 'm' && zDb[1] == 'a' && zDb[2] == 'i' && zDb[3] == 'n' && zDb[4] == 0) {
		((cellb_commits *)p)->committed = 1;
		((cellb_commits *)p)->frames = nFrame;
	}
	return 0;
}

static void cellb_set_commit_hooks(sqlite3 *db, cellb_commits *p) {
	sqlite3_commit_hook(db, p ? cellb_commit_hook : 0, p);
	sqlite3_wal_hook(db, p ? cellb_wal_hook : 0, p);
}
*/
import "C"

import (
	"errors"
	"reflect"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// dbOffset locates SQLiteConn's unexported sqlite3 handle. Reading it is
// the one way to reach the handle; Open refuses to run (layoutErr) on a
// mattn release where the field is gone rather than guess.
var dbOffset, dbLayoutErr = func() (uintptr, error) {
	f, ok := reflect.TypeFor[sqlite3.SQLiteConn]().FieldByName("db")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Name() != "_Ctype_struct_sqlite3" {
		return 0, errors.New("cgo: this mattn/go-sqlite3 release has no SQLiteConn.db *C.sqlite3 field; " +
			"drivers/cgo cannot register its WAL hook and authorizer (tested with v1.14.53)")
	}
	return f.Offset, nil
}()

func rawDB(sc *sqlite3.SQLiteConn) *C.sqlite3 {
	return *(**C.sqlite3)(unsafe.Add(unsafe.Pointer(sc), dbOffset))
}

// setAuthorizer points SQLite's authorizer at conn's authorize method (the
// handle names conn), or removes it for handle 0. Either way SQLite expires
// every prepared statement, so cached statements are authorized again.
func setAuthorizer(sc *sqlite3.SQLiteConn, handle uintptr) error {
	if rc := C.cellb_set_authorizer(rawDB(sc), C.uintptr_t(handle)); rc != 0 {
		return &sqliteError{Code: int(rc) & 0xff, ExtendedCode: int(rc), Msg: "sqlite3_set_authorizer failed"}
	}
	return nil
}

// commitFlag is the cellb_commits record in C memory that SQLite's
// commit and WAL hooks write; Go reads it with plain loads.
type commitFlag struct{ p *C.cellb_commits }

func newCommitFlag() commitFlag {
	p := (*C.cellb_commits)(C.malloc(C.size_t(unsafe.Sizeof(C.cellb_commits{}))))
	*p = C.cellb_commits{}
	return commitFlag{p}
}

// isSet: a commit happened since the last clear.
func (f commitFlag) isSet() bool { return f.p != nil && f.p.committed != 0 }

// frames is the WAL's frame count after the last commit the WAL hook
// reported since the last clear, or 0.
func (f commitFlag) frames() int64 { return int64(f.p.frames) }
func (f commitFlag) clear()        { *f.p = C.cellb_commits{} }
func (f commitFlag) free()         { C.free(unsafe.Pointer(f.p)) }

// setCommitHooks makes SQLite record every commit in f; the zero flag
// removes the hooks.
func setCommitHooks(sc *sqlite3.SQLiteConn, f commitFlag) {
	C.cellb_set_commit_hooks(rawDB(sc), f.p)
}
