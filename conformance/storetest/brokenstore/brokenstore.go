// Package brokenstore holds deliberately broken stores: wrappers that give
// any correct store.Store one flaw each, the way real buckets and adapters
// go wrong. They exist to prove that storetest catches each flaw: Twins
// describes each as a storetest twin (suite.Twin) with the cases that must
// reject it, and RunTwins shows they do, on memstore in this package's
// tests or on any bucket from a user's own test.
package brokenstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cellb/cellb/core/store"
)

// Twin is one broken store.
type Twin struct {
	Name string
	// Flaw says what the store gets wrong.
	Flaw string
	// Wrap gives a correct store the flaw.
	Wrap func(store.Store) store.Store
}

// All lists every twin.
func All() []Twin {
	return []Twin{
		{"ignores-if-none-match", "create-only writes overwrite existing objects", IgnoreIfNoneMatch},
		{"ignores-if-match", "writes conditioned on a version apply whatever the current version", IgnoreIfMatch},
		{"stale-reads", "Get returns the object as it was before its latest write", StaleReads},
		{"stale-data-reads", "GetData returns the object as it was before its latest write (Get is right)", StaleDataReads},
		{"unordered-list", "listing pages come back in reverse order", UnorderedList},
		{"acks-failed-writes", "a write that failed is reported as a success", AcksFailedWrites},
		{"loses-writes", "every seventh write is acknowledged but never made", LosesWrites},
		{"tears-large-objects", "objects over 1 MiB are stored with 64 KiB in the middle zeroed", TearsLargeObjects},
		{"ignores-cancel", "calls run to completion whatever their context says", IgnoresCancel},
		{"accepts-invalid-keys", "malformed keys are silently rewritten and written", AcceptsInvalidKeys},
		{"drops-metadata", "metadata is not stored", DropsMetadata},
		{"repeats-across-pages", "each page repeats the last entry of the page before it", RepeatsAcrossPages},
		{"busy-directories", "a write fails while another write in the same directory is in progress", BusyDirectories},
		{"truncates-streams", "a streamed put stores only the first MiB of its body", TruncatesStreams},
		{"ignores-range", "a ranged read gives the whole object", IgnoresRange},
		{"publishes-partial-bodies", "a streamed put whose body fails publishes the part it read", PublishesPartialBodies},
		{"ignores-stream-conditions", "streamed puts apply whatever their condition", IgnoresStreamConditions},
		{"drops-headers", "Content-Disposition is not stored", DropsHeaders},
		{"drops-headers-on-replace", "a compare-and-swap write stores no content headers", DropsHeadersOnReplace},
		{"headless-streams", "stream reads return no Content-Language or Content-Disposition", HeadlessStreams},
		{"decompresses-gzip", "objects stored with Content-Encoding gzip read back decompressed", DecompressesGzip},
		{"missing-delete-fails", "deleting a key that does not exist fails with ErrNotFound", MissingDeleteFails},
		{"repeats-versions", "versions are a per-key counter that starts again after a delete", RepeatsVersions},
		{"deletes-by-prefix", "a delete removes every key that begins with the one asked for", DeletesByPrefix},
		{"nesting-fails-opaquely", "a key below an existing object is refused with an untyped error", NestingFailsOpaquely},
		{"copy-overwrites", "a server-side copy replaces an existing destination", CopyOverwrites},
		{"copy-drops-metadata", "a server-side copy leaves the source's metadata and content headers behind", CopyDropsMetadata},
	}
}

// wrapper forwards to the inner store; each twin overrides what it breaks.
type wrapper struct{ store.Store }

func (w wrapper) Close() error { return store.Close(w.Store) }

// IgnoreIfNoneMatch treats create-only writes as unconditional, like a
// bucket that drops the If-None-Match header.
func IgnoreIfNoneMatch(s store.Store) store.Store {
	return &ignoreCondition{wrapper{s}, store.CreateOnly}
}

// IgnoreIfMatch treats version-conditioned writes as unconditional.
func IgnoreIfMatch(s store.Store) store.Store {
	return &ignoreCondition{wrapper{s}, store.MatchVersion}
}

type ignoreCondition struct {
	wrapper
	kind store.ConditionKind
}

func (b *ignoreCondition) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if opts.Condition.Kind == b.kind {
		opts.Condition = store.Condition{}
	}
	return b.Store.Put(ctx, key, data, opts)
}

// StaleReads serves every Get from a cache that lags one write behind,
// like a read replica or an eventually consistent bucket.
func StaleReads(s store.Store) store.Store {
	return &staleReads{wrapper: wrapper{s}, previous: map[string]*store.Object{}}
}

type staleReads struct {
	wrapper
	mu       sync.Mutex
	previous map[string]*store.Object
}

func (b *staleReads) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	before, berr := b.Store.Get(ctx, key)
	v, err := b.Store.Put(ctx, key, data, opts)
	if err == nil && berr == nil {
		b.mu.Lock()
		b.previous[key] = before
		b.mu.Unlock()
	}
	return v, err
}

func (b *staleReads) Get(ctx context.Context, key string) (*store.Object, error) {
	b.mu.Lock()
	old, ok := b.previous[key]
	b.mu.Unlock()
	if ok {
		cp := *old
		cp.Data = slices.Clone(old.Data)
		return &cp, nil
	}
	return b.Store.Get(ctx, key)
}

func (b *staleReads) Delete(ctx context.Context, key string) error {
	b.mu.Lock()
	delete(b.previous, key)
	b.mu.Unlock()
	return b.Store.Delete(ctx, key)
}

// StaleDataReads answers GetData (store.DataGetter) with the object as it
// was before its latest write, while Get stays right: a store whose cheaper
// read path lags, like a cache in front of the bucket.
func StaleDataReads(s store.Store) store.Store {
	return &staleDataReads{stale: &staleReads{wrapper: wrapper{s}, previous: map[string]*store.Object{}}}
}

type staleDataReads struct{ stale *staleReads }

func (b *staleDataReads) Get(ctx context.Context, key string) (*store.Object, error) {
	return b.stale.Store.Get(ctx, key)
}

func (b *staleDataReads) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return b.stale.Put(ctx, key, data, opts)
}

func (b *staleDataReads) Delete(ctx context.Context, key string) error {
	return b.stale.Delete(ctx, key)
}

func (b *staleDataReads) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	return b.stale.List(ctx, opts)
}

func (b *staleDataReads) Close() error { return b.stale.Close() }

// GetData implements store.DataGetter, wrongly.
func (b *staleDataReads) GetData(ctx context.Context, key string) (*store.Object, error) {
	return b.stale.Get(ctx, key)
}

// UnorderedList reverses the entries of every page, like a listing built
// from a hash map or a directory read without sorting.
func UnorderedList(s store.Store) store.Store { return &unorderedList{wrapper{s}} }

type unorderedList struct{ wrapper }

func (b *unorderedList) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p, err := b.Store.List(ctx, opts)
	slices.Reverse(p.Objects)
	slices.Reverse(p.Prefixes)
	return p, err
}

// AcksFailedWrites reports success for every Put and Delete, whatever the
// inner store said, like an adapter that ignores the response status.
func AcksFailedWrites(s store.Store) store.Store { return &acksFailed{wrapper: wrapper{s}} }

type acksFailed struct {
	wrapper
	n atomic.Uint64
}

func (b *acksFailed) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	v, err := b.Store.Put(ctx, key, data, opts)
	if err != nil {
		return store.Version(fmt.Sprintf("acked-%d", b.n.Add(1))), nil
	}
	return v, nil
}

func (b *acksFailed) Delete(ctx context.Context, key string) error {
	_ = b.Store.Delete(ctx, key)
	return nil
}

// LosesWrites acknowledges every seventh Put with a made-up version and
// never makes it, like a write-back cache that drops its buffer.
func LosesWrites(s store.Store) store.Store { return &losesWrites{wrapper: wrapper{s}} }

type losesWrites struct {
	wrapper
	n atomic.Uint64
}

func (b *losesWrites) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if n := b.n.Add(1); n%7 == 0 {
		return store.Version(fmt.Sprintf("lost-%d", n)), nil
	}
	return b.Store.Put(ctx, key, data, opts)
}

// TearThreshold is the size above which TearsLargeObjects damages a body.
const TearThreshold = 1 << 20

// TearsLargeObjects zeroes 64 KiB in the middle of every object over
// TearThreshold, like a multipart upload that lost a part's contents. The
// size stays right, so only a byte-for-byte comparison notices.
func TearsLargeObjects(s store.Store) store.Store { return &tears{wrapper{s}} }

type tears struct{ wrapper }

func (b *tears) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	if len(data) > TearThreshold {
		data = slices.Clone(data)
		mid := len(data) / 2
		clear(data[mid : mid+64<<10])
	}
	return b.Store.Put(ctx, key, data, opts)
}

// IgnoresCancel runs every call with a context that never ends.
func IgnoresCancel(s store.Store) store.Store { return &ignoresCancel{wrapper{s}} }

type ignoresCancel struct{ wrapper }

func (b *ignoresCancel) Get(ctx context.Context, key string) (*store.Object, error) {
	return b.Store.Get(context.WithoutCancel(ctx), key)
}

func (b *ignoresCancel) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return b.Store.Put(context.WithoutCancel(ctx), key, data, opts)
}

func (b *ignoresCancel) Delete(ctx context.Context, key string) error {
	return b.Store.Delete(context.WithoutCancel(ctx), key)
}

func (b *ignoresCancel) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	return b.Store.List(context.WithoutCancel(ctx), opts)
}

// AcceptsInvalidKeys rewrites malformed keys into valid ones instead of
// rejecting them, so two different keys can land on one object.
func AcceptsInvalidKeys(s store.Store) store.Store { return &acceptsInvalid{wrapper{s}} }

type acceptsInvalid struct{ wrapper }

func (b *acceptsInvalid) Get(ctx context.Context, key string) (*store.Object, error) {
	return b.Store.Get(ctx, sanitize(key))
}

func (b *acceptsInvalid) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	return b.Store.Put(ctx, sanitize(key), data, opts)
}

func (b *acceptsInvalid) Delete(ctx context.Context, key string) error {
	return b.Store.Delete(ctx, sanitize(key))
}

func (b *acceptsInvalid) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if store.ValidatePrefix(opts.Prefix) != nil {
		opts.Prefix = sanitize(opts.Prefix) + "/"
	}
	return b.Store.List(ctx, opts)
}

// sanitize turns any string into a valid key.
func sanitize(key string) string {
	if store.ValidateKey(key) == nil {
		return key
	}
	key = strings.ToValidUTF8(key, "?")
	key = strings.NewReplacer("\\", "/", "\x00", "_").Replace(key)
	var segs []string
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "", ".":
		case "..":
			segs = append(segs, "dotdot")
		default:
			segs = append(segs, seg)
		}
	}
	key = strings.Join(segs, "/")
	for len(key) > store.MaxKeyLen {
		_, size := utf8.DecodeLastRuneInString(key)
		key = key[:len(key)-size]
	}
	key = strings.TrimSuffix(key, "/")
	if key == "" {
		return "empty-key"
	}
	return key
}

// DropsMetadata stores objects without their metadata.
func DropsMetadata(s store.Store) store.Store { return &dropsMetadata{wrapper{s}} }

type dropsMetadata struct{ wrapper }

func (b *dropsMetadata) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	opts.Metadata = nil
	return b.Store.Put(ctx, key, data, opts)
}

// RepeatsAcrossPages starts every continued page with the last entry of
// the page before, like a listing that resumes at its token inclusively.
func RepeatsAcrossPages(s store.Store) store.Store {
	return &repeats{wrapper: wrapper{s}, last: map[string]store.ListPage{}}
}

type repeats struct {
	wrapper
	mu   sync.Mutex
	last map[string]store.ListPage // token -> the entry to repeat
}

func (b *repeats) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p, err := b.Store.List(ctx, opts)
	if err != nil {
		return p, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if prev, ok := b.last[opts.Token]; ok && opts.Token != "" {
		p.Objects = append(prev.Objects, p.Objects...)
		p.Prefixes = append(prev.Prefixes, p.Prefixes...)
	}
	if p.NextToken != "" {
		var tail store.ListPage
		lastObj, lastPre := "", ""
		if n := len(p.Objects); n > 0 {
			lastObj = p.Objects[n-1].Key
		}
		if n := len(p.Prefixes); n > 0 {
			lastPre = p.Prefixes[n-1]
		}
		switch {
		case lastObj > lastPre:
			tail.Objects = []store.ObjectInfo{p.Objects[len(p.Objects)-1]}
		case lastPre != "":
			tail.Prefixes = []string{lastPre}
		}
		b.last[p.NextToken] = tail
	}
	return p, nil
}

// BusyDirectories fails a Put or Delete while another one in the same
// directory (the key up to its last '/') is in progress, like a file store
// that locks whole directories and gives up instead of waiting. Each write
// holds its directory for a millisecond so that concurrent writers meet.
func BusyDirectories(s store.Store) store.Store {
	return &busyDirs{wrapper: wrapper{s}, busy: map[string]bool{}}
}

type busyDirs struct {
	wrapper
	mu   sync.Mutex
	busy map[string]bool
}

// enter marks key's directory busy, or reports that it already was.
func (b *busyDirs) enter(op, key string) (leave func(), err error) {
	dir := key[:strings.LastIndexByte(key, '/')+1]
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy[dir] {
		return nil, &store.OpError{Op: op, Key: key, Err: fmt.Errorf("directory %q is busy", dir)}
	}
	b.busy[dir] = true
	return func() {
		time.Sleep(time.Millisecond)
		b.mu.Lock()
		delete(b.busy, dir)
		b.mu.Unlock()
	}, nil
}

func (b *busyDirs) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	leave, err := b.enter("put", key)
	if err != nil {
		return "", err
	}
	defer leave()
	return b.Store.Put(ctx, key, data, opts)
}

func (b *busyDirs) Delete(ctx context.Context, key string) error {
	leave, err := b.enter("delete", key)
	if err != nil {
		return err
	}
	defer leave()
	return b.Store.Delete(ctx, key)
}

// streamer forwards the streaming calls to the inner store; the streaming
// twins override the one they break.
type streamer struct{ wrapper }

func (w streamer) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	return store.NewRangeReader(ctx, w.Store, key, offset, length)
}

func (w streamer) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	return store.PutFrom(ctx, w.Store, key, r, size, opts)
}

// TruncateAt is how much of a streamed body TruncatesStreams keeps.
const TruncateAt = 1 << 20

// TruncatesStreams keeps only the first TruncateAt bytes of a streamed
// body and reports success, like a multipart upload completed without its
// last parts, or a writer closed before it was flushed.
func TruncatesStreams(s store.Store) store.Store { return &truncates{streamer{wrapper{s}}} }

type truncates struct{ streamer }

func (b *truncates) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	data, err := io.ReadAll(io.LimitReader(r, TruncateAt))
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, r)
	return b.Store.Put(ctx, key, data, opts)
}

// IgnoresRange answers a ranged read with the whole object, like a server
// that ignores the Range header and answers 200 instead of 206, while the
// reader still claims the range that was asked for.
func IgnoresRange(s store.Store) store.Store { return &ignoresRange{streamer{wrapper{s}}} }

type ignoresRange struct{ streamer }

func (b *ignoresRange) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	r, err := store.NewRangeReader(ctx, b.Store, key, offset, length)
	if err != nil {
		return nil, err
	}
	r.Close()
	whole, err := store.NewReader(ctx, b.Store, key)
	if err != nil {
		return nil, err
	}
	r.Body = whole.Body
	return r, nil
}

// PublishesPartialBodies writes whatever it has read when a streamed body
// fails (its reader errs or its context ends), and then reports the
// failure, like an adapter that closes its writer instead of aborting it.
func PublishesPartialBodies(s store.Store) store.Store { return &partial{streamer{wrapper{s}}} }

type partial struct{ streamer }

func (b *partial) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(store.Body(ctx, r, -1))
	if v, perr := b.Store.Put(context.WithoutCancel(ctx), key, buf.Bytes(), opts); err == nil {
		return v, perr
	}
	return "", store.BodyError("put", key, err)
}

// IgnoresStreamConditions drops the condition of streamed puts only, like
// an adapter that sends the precondition on single requests but not on
// the completion of a multipart upload.
func IgnoresStreamConditions(s store.Store) store.Store {
	return &ignoresStreamCond{streamer{wrapper{s}}}
}

type ignoresStreamCond struct{ streamer }

func (b *ignoresStreamCond) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	opts.Condition = store.Condition{}
	return store.PutFrom(ctx, b.Store, key, r, size, opts)
}

// MissingDeleteFails reports ErrNotFound for a delete of a key that does not
// exist, like a backend whose DELETE answers 404 and an adapter that passes
// it on: a retried delete, or a delete racing another, then fails.
func MissingDeleteFails(s store.Store) store.Store { return &missingDelete{wrapper{s}} }

type missingDelete struct{ wrapper }

func (b *missingDelete) Delete(ctx context.Context, key string) error {
	if _, err := b.Store.Get(ctx, key); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	return b.Store.Delete(ctx, key)
}

// NestingFailsOpaquely refuses a write of "x/y" while "x" is an object with
// a plain error, like a file-system adapter that passes ENOTDIR on instead
// of either nesting the keys or refusing them with ErrInvalidKey.
func NestingFailsOpaquely(s store.Store) store.Store { return &nestingOpaque{wrapper{s}} }

type nestingOpaque struct{ wrapper }

func (b *nestingOpaque) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	for i := range len(key) {
		if key[i] != '/' || i == 0 {
			continue
		}
		if _, err := b.Store.Get(ctx, key[:i]); err == nil {
			return "", fmt.Errorf("put %s: %s is not a directory", key, key[:i])
		}
	}
	return b.Store.Put(ctx, key, data, opts)
}

// RepeatsVersions numbers each key's versions g1, g2, … and starts again at
// g1 when the key is deleted, like a backend whose version is a per-key
// counter: a version kept from before a delete matches the re-created
// object, so a stale compare-and-swap lands on an object its writer never
// read. Every answer carries the numbered version; conditions are
// translated back to the inner store's.
func RepeatsVersions(s store.Store) store.Store {
	return &repeatsVersions{wrapper: wrapper{s}, keys: map[string]*numbered{}}
}

type repeatsVersions struct {
	wrapper
	mu   sync.Mutex
	keys map[string]*numbered
}

// numbered is one key's versions since it was last deleted.
type numbered struct {
	next   int
	toReal map[store.Version]store.Version
	toFake map[store.Version]store.Version
}

func (b *repeatsVersions) fake(key string, real store.Version) store.Version {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.keys[key]
	if n == nil {
		n = &numbered{toReal: map[store.Version]store.Version{}, toFake: map[store.Version]store.Version{}}
		b.keys[key] = n
	}
	if f, ok := n.toFake[real]; ok {
		return f
	}
	n.next++
	f := store.Version(fmt.Sprintf("g%d", n.next))
	n.toFake[real], n.toReal[f] = f, real
	return f
}

func (b *repeatsVersions) real(key string, c store.Condition) store.Condition {
	if c.Kind != store.MatchVersion {
		return c
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := b.keys[key]; n != nil {
		if r, ok := n.toReal[c.Version]; ok {
			c.Version = r
		}
	}
	return c
}

func (b *repeatsVersions) Put(ctx context.Context, key string, data []byte, opts store.PutOptions) (store.Version, error) {
	opts.Condition = b.real(key, opts.Condition)
	v, err := b.Store.Put(ctx, key, data, opts)
	if err != nil {
		return v, err
	}
	return b.fake(key, v), nil
}

func (b *repeatsVersions) Get(ctx context.Context, key string) (*store.Object, error) {
	o, err := b.Store.Get(ctx, key)
	if err == nil {
		o.Version = b.fake(key, o.Version)
	}
	return o, err
}

func (b *repeatsVersions) GetData(ctx context.Context, key string) (*store.Object, error) {
	o, err := store.GetData(ctx, b.Store, key)
	if err == nil {
		o.Version = b.fake(key, o.Version)
	}
	return o, err
}

func (b *repeatsVersions) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	p, err := b.Store.List(ctx, opts)
	for i := range p.Objects {
		p.Objects[i].Version = b.fake(p.Objects[i].Key, p.Objects[i].Version)
	}
	return p, err
}

func (b *repeatsVersions) Delete(ctx context.Context, key string) error {
	err := b.Store.Delete(ctx, key)
	if err == nil {
		b.mu.Lock()
		delete(b.keys, key)
		b.mu.Unlock()
	}
	return err
}

// DeletesByPrefix deletes every key that begins with the one asked for,
// like an adapter that deletes through a prefix listing.
func DeletesByPrefix(s store.Store) store.Store { return &deletesByPrefix{wrapper{s}} }

type deletesByPrefix struct{ wrapper }

func (b *deletesByPrefix) Delete(ctx context.Context, key string) error {
	p, err := b.Store.List(ctx, store.ListOptions{Prefix: key})
	if err != nil {
		return err
	}
	for _, o := range p.Objects {
		if err := b.Store.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return b.Store.Delete(ctx, key)
}
