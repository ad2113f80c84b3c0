//go:build cgo

package cgo

import (
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// rows adapts mattn's rows to the port. It closes itself at the end of the
// result, so an autocommit statement run through Query (INSERT … RETURNING)
// commits, and its pages are captured, as soon as its rows are read.
type rows struct {
	c      *conn
	r      *sqlite3.SQLiteRows
	cols   []string
	vals   []sqldriver.Value
	out    []any
	err    error
	closed bool
}

func (r *rows) Columns() []string { return r.cols }

func (r *rows) Next() bool {
	if r.closed {
		return false
	}
	if err := r.r.Next(r.vals); err != nil {
		if err != io.EOF {
			r.err = r.c.explain(err)
		}
		r.close()
		return false
	}
	for i, v := range r.vals {
		r.out[i] = v
	}
	return true
}

func (r *rows) Values() []any { return r.out }

func (r *rows) Err() error { return r.err }

func (r *rows) Close() error {
	err := r.close()
	if r.err == nil && err != nil {
		r.err = err
	}
	return err
}

func (r *rows) close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.r.Close()
	if r.c.sc != nil {
		r.c.afterStatement()
	}
	return wrapErr(err)
}

// mattn converts the values of columns declared DATE, DATETIME, TIMESTAMP
// or BOOLEAN to time.Time or bool, which loses what SQLite stored and has
// no switch. The conversion is keyed on SQLiteRows' cached declared types,
// which mattn fills in only while they are nil; keepStorageClasses fills
// them with empty strings first, so every value comes back as SQLite's own
// storage class. The field is unexported, so its location is looked up by
// reflection once, and Open refuses to run (layoutErr) on a mattn release
// where it is gone or has changed type, rather than return altered values.
// (Tests pin this: TestStorageClassesKept.)
var declTypeOffset, layoutErr = func() (uintptr, error) {
	f, ok := reflect.TypeFor[sqlite3.SQLiteRows]().FieldByName("decltype")
	if !ok || f.Type != reflect.TypeFor[[]string]() {
		return 0, errors.New("cgo: this mattn/go-sqlite3 release has no SQLiteRows.decltype []string field; " +
			"drivers/cgo cannot switch off its DATE/DATETIME/TIMESTAMP/BOOLEAN conversions (tested with v1.14.53)")
	}
	return f.Offset, nil
}()

func (c *conn) keepStorageClasses(r *sqlite3.SQLiteRows, ncol int) {
	if len(c.blanks) < ncol {
		c.blanks = make([]string, ncol)
	}
	p := (*[]string)(unsafe.Add(unsafe.Pointer(r), declTypeOffset))
	*p = c.blanks[:ncol:ncol]
}

// explain converts a statement error, saying why the capture guard refused
// a pragma when it did.
func (c *conn) explain(err error) error {
	denied := c.denied
	c.denied = ""
	err = wrapErr(err)
	var se *sqliteError
	if denied != "" && errors.As(err, &se) && se.Code == codeAuth {
		return fmt.Errorf("cgo: PRAGMA %s is refused while page capture is on: the WAL must carry every commit until the driver has read it (WAL mode, automatic checkpoints off): %w", denied, err)
	}
	return err
}
