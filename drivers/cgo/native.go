package cgo

// mattn/go-sqlite3 has no WAL hook, and its authorizer hook drops SQLite's
// fourth argument (the trigger or view name). Both are registered here
// directly on the connection's sqlite3 handle. The three functions used are
// declared by hand below (the project carries no SQLite header); they
// resolve to the SQLite that mattn/go-sqlite3 links, whose symbols are
// global.

/*
#include <stdint.h>

typedef struct sqlite3 sqlite3;

int sqlite3_set_authorizer(sqlite3 *db,
	int (*xAuth)(void *, int, const char *, const char *, const char *, const char *),
	void *pUserData);
void *sqlite3_wal_hook(sqlite3 *db, int (*xHook)(void *, sqlite3 *, const char *, int), void *pArg);
int sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *zDb, int eMode, int *pnLog, int *pnCkpt);

// Defined in native_export.go.
extern int cellbAuthorize(uintptr_t conn, int action, char *arg1, char *arg2, char *db, char *trigger);
extern int cellbWALCommitted(uintptr_t conn, char *db);
extern void cellbCheckpointed(uintptr_t conn, int rc);

static int cellb_authorize(void *conn, int action, const char *a, const char *b, const char *db, const char *trigger) {
	return cellbAuthorize((uintptr_t)conn, action, (char *)a, (char *)b, (char *)db, (char *)trigger);
}

// SQLITE_CHECKPOINT_TRUNCATE is 3 and SQLITE_OK is 0 in every SQLite
// release.
static int cellb_wal_hook(void *conn, sqlite3 *db, const char *zDb, int nFrame) {
	if (cellbWALCommitted((uintptr_t)conn, (char *)zDb)) {
		int rc = sqlite3_wal_checkpoint_v2(db, zDb, 3, 0, 0);
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

// setWALHook registers the commit reader for the connection named by
// handle, or removes it for handle 0.
func setWALHook(sc *sqlite3.SQLiteConn, handle uintptr) {
	C.cellb_set_wal_hook(rawDB(sc), C.uintptr_t(handle))
}
