//go:build cgo

package cgo

import (
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/cellb/cellb/core/driver"
)

type sqliteError = driver.SQLiteError

const codeAuth = driver.CodeAuth

// wrapErr turns mattn's error into the port's *driver.SQLiteError, which
// keeps SQLite's message and result codes and matches driver.ErrNotAuthorized
// for an authorizer's denial. Other errors get the package prefix.
func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		ext := int(se.ExtendedCode)
		if ext == 0 {
			ext = int(se.Code)
		}
		return &driver.SQLiteError{Code: int(se.Code), ExtendedCode: ext, Msg: se.Error()}
	}
	var de *driver.SQLiteError
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("cgo: %w", err)
}
