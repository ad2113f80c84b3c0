//go:build unix

package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/cellb/cellb/core/store"
)

var errBadDelimiter = errors.New("delimiter must be valid UTF-8 without NUL bytes")

// List implements store.Driver.
//
// A directory walk does not meet keys in byte order ("a-b" sorts before
// "a/b", but "a0" after it), so List walks depth first with each
// directory's entries sorted by the key range they cover: a file by its
// key, a directory by its key plus "/". Those ranges never overlap, so the
// walk meets keys in exactly the order a bucket lists them, and a page
// needs to read only the directories its keys live in, not the tree.
func (s *driver) List(ctx context.Context, opts store.ListOptions) (store.ListPage, error) {
	if !validDelimiter(opts.Delimiter) {
		return store.ListPage{}, errBadDelimiter
	}
	from, err := decodeToken(opts.Token)
	if err != nil {
		return store.ListPage{}, err
	}
	if err := s.begin(ctx); err != nil {
		return store.ListPage{}, err
	}
	defer s.end()

	l := &lister{s: s, ctx: ctx, prefix: opts.Prefix, delim: opts.Delimiter, from: max(from, opts.Prefix), limit: opts.Limit}
	l.walk(opts.Prefix[:strings.LastIndexByte(opts.Prefix, '/')+1])
	if l.err != nil {
		return store.ListPage{}, l.err
	}
	if l.more {
		l.page.NextToken = encodeToken(l.from)
	}
	return l.page, nil
}

// lister is one page of a listing in progress.
type lister struct {
	s      *driver
	ctx    context.Context
	prefix string
	delim  string
	from   string // every entry still to come is >= from
	limit  int

	page  store.ListPage
	count int
	more  bool  // an entry exists beyond the page
	err   error // stops the walk
}

// entry is a directory member the walk may visit.
type entry struct {
	name  string
	isDir bool
	span  string // the member's key, plus "/" for a directory
}

// walk visits the directory holding the keys that start with dirKey ("" for
// the root, else ending in "/"). It returns false when the page is done.
func (l *lister) walk(dirKey string) bool {
	ents, err := l.s.readDir(dirKey)
	if err != nil {
		if isMissing(err) || errors.Is(err, syscall.ELOOP) {
			return true // pruned meanwhile, or behind a link the store does not follow
		}
		l.err = err
		return false
	}
	for _, e := range ents {
		if err := l.ctx.Err(); err != nil {
			l.err = err
			return false
		}
		if e.isDir {
			if !strings.HasPrefix(e.span, l.prefix) && !strings.HasPrefix(l.prefix, e.span) {
				continue
			}
			if end, ok := pastPrefix(e.span); ok && end <= l.from {
				continue // the whole subtree lies before the resume point
			}
			if !l.walk(e.span) {
				return false
			}
			continue
		}
		if e.span < l.from || !strings.HasPrefix(e.span, l.prefix) {
			continue
		}
		if !l.emit(e.span) {
			return false
		}
	}
	return true
}

// emit adds the object key, or the common prefix it folds into, to the
// page. It returns false when the page is done.
func (l *lister) emit(key string) bool {
	if l.delim != "" {
		rest := key[len(l.prefix):]
		if i := strings.Index(rest, l.delim); i >= 0 {
			cp := key[:len(l.prefix)+i+len(l.delim)]
			if cp >= l.from {
				if l.count == l.limit {
					l.more = true
					return false
				}
				l.page.Prefixes = append(l.page.Prefixes, cp)
				l.count++
			}
			// Either way, nothing under cp is listed again.
			next, ok := pastPrefix(cp)
			if !ok {
				return false
			}
			l.from = next
			return true
		}
	}
	info, ok, err := l.s.statObject(l.ctx, key)
	if err != nil {
		l.err = err
		return false
	}
	if !ok {
		return true // deleted meanwhile, or not a regular file
	}
	if l.count == l.limit {
		l.more = true
		return false
	}
	l.page.Objects = append(l.page.Objects, info)
	l.count++
	l.from = after(key)
	return true
}

// readDir returns the members of the directory for dirKey that could hold
// objects, sorted by span. Links and special files are left out, and so is
// the store's own directory at the root.
func (s *driver) readDir(dirKey string) ([]entry, error) {
	name := strings.TrimSuffix(dirKey, "/")
	if name == "" {
		name = "."
	}
	f, err := s.fsys.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ents []entry
	add := func(n string, typ os.FileMode) {
		if !validSegment(n) || (dirKey == "" && strings.EqualFold(n, metaDir)) {
			return
		}
		switch {
		case typ.IsDir():
			ents = append(ents, entry{name: n, isDir: true, span: dirKey + n + "/"})
		case typ.IsRegular():
			ents = append(ents, entry{name: n, span: dirKey + n})
		}
	}
	// *os.File.ReadDir reads types from the directory itself; only other
	// file systems pay for a stat per member.
	if rd, ok := f.(interface {
		ReadDir(int) ([]iofs.DirEntry, error)
	}); ok {
		des, err := rd.ReadDir(-1)
		if err != nil {
			return nil, err
		}
		for _, de := range des {
			add(de.Name(), de.Type())
		}
	} else {
		fis, err := f.Readdir(-1)
		if err != nil {
			return nil, err
		}
		for _, fi := range fis {
			add(fi.Name(), fi.Mode().Type())
		}
	}
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.span, b.span) })
	return ents, nil
}

// validSegment reports whether a file name can be one segment of a key.
func validSegment(n string) bool {
	return n != "" && n != "." && n != ".." && len(n) <= maxSegment && utf8.ValidString(n) &&
		!strings.ContainsAny(n, "\\\x00")
}

// statObject describes the object at key for a listing. ok is false when
// there is no object there any more.
func (s *driver) statObject(ctx context.Context, key string) (info store.ObjectInfo, ok bool, err error) {
	once := func() (settled bool, err error) {
		fi, err := s.fsys.Stat(key)
		if isMissing(err) || errors.Is(err, syscall.ELOOP) {
			return true, nil
		}
		if err != nil {
			return true, err
		}
		if !fi.Mode().IsRegular() {
			return true, nil
		}
		id, err := identityOf(fi)
		if err != nil {
			return true, err
		}
		rec, settled, err := s.resolve(key, id)
		if err != nil || !settled {
			return settled, err
		}
		info, ok = store.ObjectInfo{Key: key, Size: fi.Size(), Version: rec.Version, Modified: fi.ModTime()}, true
		return true, nil
	}
	for range lockFreeReads {
		if settled, err := once(); settled || err != nil {
			return info, ok, err
		}
	}
	unlock, err := s.locks.lock(ctx, stripeOf(key))
	if err != nil {
		return info, false, err
	}
	defer unlock()
	settled, err := once()
	if err == nil && !settled {
		err = errUnsettled
	}
	return info, ok, err
}
