package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"golang.org/x/oauth2"

	"github.com/cellb/cellb/core/store"
)

// ErrNoVersion reports an answer that carried no object generation: a
// read fails with it, and a write that succeeded without one is an
// ambiguous outcome (the caller re-reads), never an empty version.
var ErrNoVersion = store.ErrNoVersion

// ErrChecksum reports an upload the service stored with another CRC32C
// than the body's. It is an ambiguous outcome: something was written.
var ErrChecksum = errors.New("gcs: the stored object's CRC32C differs from the body's")

// Hints for the bucket's definite refusals, naming what the user sets.
const (
	accessHint = "check GOOGLE_APPLICATION_CREDENTIALS (or gcloud auth application-default login) and that the account may use the bucket"
	bucketHint = "check the bucket's name in the URL, and STORAGE_EMULATOR_HOST for an emulator"
)

// The requests whose answers Classify tells apart.
const (
	opGet    = "get"
	opPut    = "put"
	opChunk  = "upload" // a chunk of a resumable upload, sent to its session
	opDelete = "delete"
	opList   = "list"
	opCopy   = "copy"
)

// APIError is a JSON API answer with a status other than success.
type APIError struct {
	// Op is the request: get, put, upload (a chunk of a resumable
	// upload), delete, list or copy.
	Op     string
	Status int
	// Reason is the first error's reason ("notFound", "conditionNotMet",
	// "forbidden"), when the answer carried one.
	Reason  string
	Message string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("gcs %s: HTTP %d", e.Op, e.Status)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// apiError reads a failed answer's error (JSON, or the text of a media
// download's error) and closes its body.
func apiError(op string, res *http.Response) *APIError {
	defer res.Body.Close()
	e := &APIError{Op: op, Status: res.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var body struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.Error.Message != "" || len(body.Error.Errors) > 0) {
		e.Message = body.Error.Message
		if len(body.Error.Errors) > 0 {
			e.Reason = body.Error.Errors[0].Reason
		}
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 || strings.HasPrefix(msg, "<") {
		msg = "" // an HTML or XML page says nothing the status does not
	}
	e.Message = msg
	return e
}

// missingBucket reports a 404 that names the bucket, not the object. The
// service says so in the message ("The specified bucket does not exist.");
// and only a missing bucket answers 404 to an upload or a listing.
func (e *APIError) missingBucket() bool {
	if e.Status != http.StatusNotFound {
		return false
	}
	if e.Op == opPut || e.Op == opList {
		return true
	}
	m := strings.ToLower(e.Message)
	return !strings.HasPrefix(m, "no such object") && strings.Contains(m, "bucket does not exist")
}

// Classify is the one place GCS answers map to portable kinds.
func (d *driver) Classify(err error) store.ErrorClass { return classify(err) }

func classify(err error) store.ErrorClass {
	var ae *APIError
	if errors.As(err, &ae) {
		c := store.ErrorClass{Status: ae.Status, Code: ae.Reason}
		switch st := ae.Status; {
		case st == http.StatusPreconditionFailed:
			c.Kind = store.KindPreconditionFailed
		case st == http.StatusUnauthorized || st == http.StatusForbidden:
			c.Kind, c.Hint = store.KindAccessDenied, accessHint
		case ae.missingBucket():
			c.Kind, c.Hint = store.KindBucketNotFound, bucketHint
		case st == http.StatusNotFound && ae.Op == opChunk:
			// The upload session is gone: nothing was created.
			c.Kind = store.KindRejected
		case st == http.StatusNotFound:
			c.Kind = store.KindNotFound
		case st == http.StatusRequestedRangeNotSatisfiable:
			c.Kind = store.KindInvalidRange
		case st == http.StatusRequestTimeout || st == http.StatusTooManyRequests || st >= 500:
			c.Kind = store.KindTransient
		case st >= 400 && st < 500:
			c.Kind = store.KindRejected
		}
		return c
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		// The token was refused before the request was sent.
		c := store.ErrorClass{Kind: store.KindAccessDenied, Code: re.ErrorCode, Hint: accessHint}
		if re.Response != nil {
			c.Status = re.Response.StatusCode
			if c.Status >= 500 || c.Status == http.StatusTooManyRequests {
				c.Kind, c.Hint = store.KindTransient, ""
			}
		}
		return c
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return store.ErrorClass{Kind: store.KindUnknown}
	}
	var ne net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return store.ErrorClass{Kind: store.KindTransient}
	}
	return store.ErrorClass{Kind: store.KindUnknown}
}
