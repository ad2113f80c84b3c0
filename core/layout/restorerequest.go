package layout

import (
	"encoding/json"
)

// restoreRequestFile is the restore request's name inside the cell's LTX
// prefix: an object beside the e<epoch>/ directories, as celld's
// retired.json is, so the listing of the cell's epochs (which a restore
// and the log's Holds already make) shows it without a read of its own.
const restoreRequestFile = "restore.json"

// RestoreRequestKey is a cell's pending restore on its next session
// (State.RestoreBookmarkOnNextSession): "cells/<cell>/ltx/restore.json".
// celld does not read it.
func RestoreRequestKey(cell string) string { return LTX().Prefix(cell) + restoreRequestFile }

// IsRestoreRequestKey reports whether a key listed under the cell's LTX
// prefix is its restore request.
func IsRestoreRequestKey(cell, key string) bool { return key == RestoreRequestKey(cell) }

// RestoreRequest is cells/<cell>/ltx/restore.json: restore Bookmark (the
// text of a durability.Bookmark) when the cell next opens. Epoch is the
// epoch of the session that asked, Undo the bookmark of its state when it
// asked (both for operators; the restore reads only Bookmark).
type RestoreRequest struct {
	Bookmark string `json:"bookmark"`
	Undo     string `json:"undo,omitempty"`
	Epoch    uint64 `json:"epoch"`
}

// DecodeRestoreRequest decodes restore.json; bookmark is required.
func DecodeRestoreRequest(key string, data []byte) (RestoreRequest, error) {
	var r RestoreRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return RestoreRequest{}, &RecordError{Key: key, Reason: "not a JSON object with a bookmark", Err: err}
	}
	if r.Bookmark == "" {
		return RestoreRequest{}, &RecordError{Key: key, Reason: `"bookmark" is required`}
	}
	return r, nil
}

// Encode writes the record compactly.
func (r RestoreRequest) Encode() []byte {
	b, _ := json.Marshal(r)
	return b
}
