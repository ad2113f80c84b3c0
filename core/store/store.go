// Package store defines the Store port: the bucket a CellB node shares with
// other CellB and celld nodes.
//
// A Store is deliberately small — Get, Put (optionally conditional), Delete,
// List — because every coordination rule CellB follows (node leases,
// ownership records, the LTX log) is built from those four calls and the two
// conditions celld relies on: create-only (If-None-Match: *) and
// replace-if-version (If-Match / GCS generation match).
//
// Adapters live in their own modules (adapters/fs, adapters/s3, ...); the
// public conformance suite in conformance/storetest says what every adapter
// must do.
package store

import (
	"context"
	"time"
)

// Version is an opaque token naming one version of one object: an ETag on S3
// and Azure, a generation on GCS. Only the adapter that returned it may
// interpret it. An existing object never has an empty Version.
type Version string

// Object is a whole object as read by Get.
type Object struct {
	Key      string
	Data     []byte
	Version  Version
	Metadata map[string]string
	// Headers are the object's content headers (see ContentHeaders).
	Headers  ContentHeaders
	Modified time.Time
}

// ObjectInfo describes an object in a listing.
type ObjectInfo struct {
	Key      string
	Size     int64
	Version  Version
	Modified time.Time
}

// ConditionKind selects how a Put is conditioned.
type ConditionKind uint8

const (
	// Unconditional writes whatever is there.
	Unconditional ConditionKind = iota
	// CreateOnly applies only when no object exists under the key
	// (If-None-Match: *; GCS ifGenerationMatch=0).
	CreateOnly
	// MatchVersion applies only when the current object has exactly the
	// given Version (If-Match; GCS ifGenerationMatch=<generation>).
	MatchVersion
)

// Condition is the precondition of a Put. The zero value is unconditional.
type Condition struct {
	Kind    ConditionKind
	Version Version // only for MatchVersion
}

// IfAbsent is the create-only condition.
var IfAbsent = Condition{Kind: CreateOnly}

// IfVersion is the compare-and-swap condition on version v.
func IfVersion(v Version) Condition { return Condition{Kind: MatchVersion, Version: v} }

// IsConditional reports whether the condition needs the store's cooperation.
func (c Condition) IsConditional() bool { return c.Kind != Unconditional }

func (c Condition) String() string {
	switch c.Kind {
	case CreateOnly:
		return "if-none-match *"
	case MatchVersion:
		return "if-match " + string(c.Version)
	default:
		return "unconditional"
	}
}

// PutOptions are the optional parts of a Put.
type PutOptions struct {
	Condition Condition
	// Metadata is stored with the object and returned by Get. Names follow
	// ValidateMetadata; values are printable ASCII.
	Metadata map[string]string
	// Headers are stored as the object's own HTTP content headers (not in
	// its user metadata) and returned by Get and the stream readers. Values
	// follow ValidateHeaders.
	Headers ContentHeaders
}

// ListOptions selects a page of a listing.
type ListOptions struct {
	// Prefix restricts the listing to keys that start with it.
	Prefix string
	// Delimiter, when set (normally "/"), folds every key that has the
	// delimiter after the prefix into one entry of ListPage.Prefixes, as
	// S3's CommonPrefixes do.
	Delimiter string
	// Token continues a listing: pass the NextToken of the previous page.
	Token string
	// Limit is the most entries (objects plus prefixes) wanted in one page;
	// 0 lets the store choose (at most 1000). A store may return fewer.
	Limit int
}

// ListPage is one page of a listing. Objects and Prefixes are each in
// ascending byte order, and every entry of a later page sorts after every
// entry of an earlier one.
type ListPage struct {
	Objects  []ObjectInfo
	Prefixes []string
	// NextToken is empty on the last page.
	NextToken string
}

// Store is the bucket port.
//
// Every method honours ctx: a cancelled context stops the call. A write
// cancelled after it was sent returns an ambiguous error (see ErrAmbiguous),
// because it may have been applied.
//
// Read-after-write and list-after-write consistency are required: once Put
// or Delete returns nil, every later Get and List (from any process) sees it.
type Store interface {
	// Get reads a whole object. A missing key gives ErrNotFound.
	Get(ctx context.Context, key string) (*Object, error)
	// Put writes a whole object and returns its new Version. A failed
	// condition gives ErrPreconditionFailed and changes nothing; a failure
	// after which the write may or may not have happened gives ErrAmbiguous.
	Put(ctx context.Context, key string, data []byte, opts PutOptions) (Version, error)
	// Delete removes an object; deleting a missing key succeeds.
	Delete(ctx context.Context, key string) error
	// List returns one page of keys.
	List(ctx context.Context, opts ListOptions) (ListPage, error)
}

// Closer is implemented by stores that hold resources (connections, locks).
type Closer interface {
	Close() error
}

// Close closes s if it implements Closer.
func Close(s Store) error {
	if c, ok := s.(Closer); ok {
		return c.Close()
	}
	return nil
}
