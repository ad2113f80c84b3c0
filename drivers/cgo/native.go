package cgo

// mattn/go-sqlite3 has no WAL hook, and its authorizer hook drops SQLite's
// fourth argument (the trigger or view name). Both are registered here
// directly on the connection's sqlite3 handle. The three functions used are
// declared by hand below (the project carries no SQLite header); they
// resolve to the SQLite that mattn/go-sqlite3 links, whose symbols are
// global.

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct sqlite3 sqlite3;

int sqlite3_set_authorizer(sqlite3 *db,
	int (*xAuth)(void *, int, const char *, const char *, const char *, const char *),
	void *pUserData);
void *sqlite3_wal_hook(sqlite3 *db, int (*xHook)(void *, sqlite3 *, const char *, int), void *pArg);
int sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *zDb, int eMode, int *pnLog, int *pnCkpt);
void *sqlite3_commit_hook(sqlite3 *db, int (*xCallback)(void *), void *pArg);

// Defined in native_export.go.
extern int cellbAuthorize(uintptr_t conn, int action, char *arg1, char *arg2, char *db, char *trigger);
extern int cellbWALCommitted(uintptr_t conn, char *db, int frames);
extern void cellbCheckpointed(uintptr_t conn, int rc);

static int cellb_authorize(void *conn, int action, const char *a, const char *b, const char *db, const char *trigger) {
	return cellbAuthorize((uintptr_t)conn, action, (char *)a, (char *)b, (char *)db, (char *)trigger);
}

// SQLITE_CHECKPOINT_RESTART is 2 and SQLITE_OK is 0 in every SQLite
// release. RESTART, not TRUNCATE: the log is then overwritten in place
// instead of growing the file again block by block.
static int cellb_wal_hook(void *conn, sqlite3 *db, const char *zDb, int nFrame) {
	if (cellbWALCommitted((uintptr_t)conn, (char *)zDb, nFrame)) {
		int rc = sqlite3_wal_checkpoint_v2(db, zDb, 2, 0, 0);
		cellbCheckpointed((uintptr_t)conn, rc);
	}
	return 0;
}

static int cellb_set_authorizer(sqlite3 *db, uintptr_t conn) {
	return sqlite3_set_authorizer(db, conn ? cellb_authorize : 0, (void *)conn);
}

static void cellb_set_wal_hook(sqlite3 *db, uintptr_t conn) {
	sqlite3_wal_hook(db, conn ? cellb_wal_hook : 0, (void *)conn);
}

// The commit hook only raises a flag in C memory, which Go reads without a
// call: it costs no callback into Go on every commit.
static int cellb_commit_hook(void *flag) {
	*(int *)flag = 1;
	return 0;
}

static void cellb_set_commit_flag(sqlite3 *db, int *flag) {
	sqlite3_commit_hook(db, flag ? cellb_commit_hook : 0, flag);
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

// commitFlag is an int in C memory that the commit hook sets.
type commitFlag struct{ p *C.int }

func newCommitFlag() commitFlag {
	p := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	*p = 0
	return commitFlag{p}
}

func (f commitFlag) isSet() bool { return f.p != nil && *f.p != 0 }
func (f commitFlag) set()        { *f.p = 1 }
func (f commitFlag) clear()      { *f.p = 0 }
func (f commitFlag) free()       { C.free(unsafe.Pointer(f.p)) }

// setCommitFlag makes SQLite set f on every commit; the zero flag removes
// the hook.
func setCommitFlag(sc *sqlite3.SQLiteConn, f commitFlag) {
	C.cellb_set_commit_flag(rawDB(sc), f.p)
}

// setWALHook registers the commit reader for the connection named by
// handle, or removes it for handle 0.
func setWALHook(sc *sqlite3.SQLiteConn, handle uintptr) {
	C.cellb_set_wal_hook(rawDB(sc), C.uintptr_t(handle))
}
