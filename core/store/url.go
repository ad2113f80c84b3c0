package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// ErrUnknownScheme: a bucket URL names a scheme its URLMux does not know.
// It comes wrapped in a *URLError whose message lists the known forms.
var ErrUnknownScheme = errors.New("unknown scheme")

// URLError reports a bucket URL that cannot be opened because of the URL
// itself: it is empty or malformed, names an unknown scheme (then Err wraps
// ErrUnknownScheme), has no bucket name, a prefix outside celld's alphabet,
// credentials, or a query parameter the scheme does not take. Failures of
// the bucket behind a well-formed URL (a missing directory, refused
// credentials) are the adapter's own errors, not URLErrors.
type URLError struct {
	URL string // the URL as given
	Err error  // why it was refused
}

func (e *URLError) Error() string { return fmt.Sprintf("bad bucket URL %q: %v", e.URL, e.Err) }

func (e *URLError) Unwrap() error { return e.Err }

// BucketURL is a parsed bucket URL, as an opener receives it. The mux has
// already checked everything the scheme declared: the bucket name, the
// prefix and the query parameters.
type BucketURL struct {
	// URL is the URL as parsed; a plain directory path is given as
	// file:///<absolute path>.
	URL *url.URL
	// Raw is the URL as the caller wrote it, for messages.
	Raw string
	// Scheme is the registered scheme, in lower case.
	Scheme string
	// Bucket is the bucket or container name: the URL's host (bucket
	// schemes only).
	Bucket string
	// Prefix is the key prefix, without leading or trailing '/' (bucket
	// schemes only). The mux applies it with WithPrefix on top of the
	// opener's store, so openers never deal with it.
	Prefix string
	// Dir is the local directory, cleaned (directory schemes only).
	Dir string
	// Query holds the query parameters, each given at most once and each
	// one the scheme declared in Params.
	Query map[string]string
}

// Errorf returns a *URLError for u, for an opener that refuses a value in
// the URL (a query parameter it cannot parse, say).
func (u *BucketURL) Errorf(format string, args ...any) error {
	return &URLError{URL: u.Raw, Err: fmt.Errorf(format, args...)}
}

// URLOpener opens the buckets of one scheme.
type URLOpener interface {
	OpenBucketURL(ctx context.Context, u *BucketURL) (Store, error)
}

// URLOpenerFunc adapts a function to URLOpener.
type URLOpenerFunc func(ctx context.Context, u *BucketURL) (Store, error)

// OpenBucketURL calls f.
func (f URLOpenerFunc) OpenBucketURL(ctx context.Context, u *BucketURL) (Store, error) {
	return f(ctx, u)
}

// URLScheme describes one URL scheme for URLMux.Register.
type URLScheme struct {
	// Name is the URL scheme: a letter, then letters, digits, '+', '-' or
	// '.'; matched without regard to case.
	Name string
	// Form is the URL's shape, shown in errors and help, e.g.
	// "s3://bucket[/prefix][?endpoint=URL&region=R]".
	Form string
	// Params are the query parameters the scheme takes; any other
	// parameter, or one given twice, is refused with a *URLError.
	Params []string
	// Dir marks a scheme whose URL path is a local directory
	// (file:///path). The mux then also gives it plain paths (no "://")
	// when it is registered as "file". Without Dir the URL is
	// scheme://BUCKET[/PREFIX].
	Dir bool
	// Opener opens the URL.
	Opener URLOpener
}

// URLMux opens buckets by URL: each adapter registers its scheme into it,
// and Open dispatches on the URL's scheme. It is a value, not a global:
// whoever builds the program decides which adapters it carries, e.g.
//
//	mux := store.NewURLMux(fs.Register, s3.Register)
//	bucket, err := mux.Open(ctx, "s3://my-bucket/prod?region=eu-west-1")
//
// A URLMux is safe for concurrent use; its zero value is an empty mux.
type URLMux struct {
	mu      sync.RWMutex
	schemes map[string]URLScheme
}

// NewURLMux returns a mux with the schemes that each register function
// adds (adapters export one: fs.Register, s3.Register, ...).
func NewURLMux(register ...func(*URLMux)) *URLMux {
	m := &URLMux{}
	for _, r := range register {
		r(m)
	}
	return m
}

// Register adds a scheme. Like http.ServeMux.Handle and sql.Register, it
// panics on a programming error: an invalid or already registered name,
// or a nil opener.
func (m *URLMux) Register(s URLScheme) {
	name := strings.ToLower(s.Name)
	switch {
	case !validSchemeName(name):
		panic(fmt.Sprintf("store: URLMux.Register: invalid scheme name %q", s.Name))
	case s.Opener == nil:
		panic(fmt.Sprintf("store: URLMux.Register: scheme %q has no opener", s.Name))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.schemes == nil {
		m.schemes = map[string]URLScheme{}
	}
	if _, dup := m.schemes[name]; dup {
		panic(fmt.Sprintf("store: URLMux.Register: scheme %q is already registered", name))
	}
	s.Name = name
	if s.Form == "" {
		s.Form = name + "://bucket[/prefix]"
		if s.Dir {
			s.Form = name + ":///path/to/dir"
		}
	}
	s.Params = slices.Clone(s.Params)
	m.schemes[name] = s
}

// Schemes returns the registered scheme names, sorted.
func (m *URLMux) Schemes() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := make([]string, 0, len(m.schemes))
	for n := range m.schemes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Scheme returns the registration of name (any case).
func (m *URLMux) Scheme(name string) (URLScheme, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.schemes[strings.ToLower(name)]
	if ok {
		s.Params = slices.Clone(s.Params)
	}
	return s, ok
}

// ValidScheme reports whether m opens URLs of the scheme name (any case).
func (m *URLMux) ValidScheme(name string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.schemes[strings.ToLower(name)]
	return ok
}

// Open opens the bucket rawURL names: scheme://BUCKET[/PREFIX][?QUERY] for
// bucket schemes, file:///dir or a plain directory path for the "file"
// scheme. A prefix is applied with WithPrefix, so every key of the
// returned store lives under it. A URL that cannot be parsed or names an
// unknown scheme fails with a *URLError before any opener runs; an
// opener's own error is returned as it is.
func (m *URLMux) Open(ctx context.Context, rawURL string) (Store, error) {
	s, u, err := m.parse(rawURL)
	if err != nil {
		return nil, err
	}
	st, err := s.Opener.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, err
	}
	if u.Prefix == "" {
		return st, nil
	}
	ps, err := WithPrefix(st, u.Prefix)
	if err != nil {
		_ = Close(st)
		return nil, &URLError{URL: rawURL, Err: err}
	}
	return ps, nil
}

// Parse checks rawURL as Open would, without opening anything.
func (m *URLMux) Parse(rawURL string) (*BucketURL, error) {
	_, u, err := m.parse(rawURL)
	return u, err
}

func (m *URLMux) parse(raw string) (URLScheme, *BucketURL, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	bad := func(format string, args ...any) (URLScheme, *BucketURL, error) {
		return URLScheme{}, nil, &URLError{URL: raw, Err: fmt.Errorf(format, args...)}
	}
	if strings.TrimSpace(raw) == "" {
		return bad("empty")
	}
	if !strings.Contains(raw, "://") {
		// A plain path names a local directory.
		fileScheme, ok := m.schemes["file"]
		if !ok || !fileScheme.Dir {
			return bad("local directories are not supported here (no file scheme; known: %s)", m.forms())
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return bad("%v", err)
		}
		return fileScheme, &BucketURL{URL: &url.URL{Scheme: "file", Path: abs}, Raw: raw, Scheme: "file", Dir: abs, Query: map[string]string{}}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad("%v", err)
	}
	name := strings.ToLower(u.Scheme)
	s, ok := m.schemes[name]
	if !ok {
		return URLScheme{}, nil, &URLError{URL: raw, Err: fmt.Errorf("%w %q (known: %s)", ErrUnknownScheme, u.Scheme, m.forms())}
	}
	if u.User != nil {
		return bad("credentials do not belong in the URL; use the environment")
	}
	if u.Fragment != "" || u.Opaque != "" {
		return bad("unexpected %q", u.Fragment+u.Opaque)
	}
	q, err := queryOf(u, s)
	if err != nil {
		return bad("%v", err)
	}
	out := &BucketURL{URL: u, Raw: raw, Scheme: name, Query: q}
	if s.Dir {
		if u.Host != "" && u.Host != "localhost" {
			return bad("a %s URL names a local directory: use %s:///path (three slashes)", name, name)
		}
		if u.Path == "" {
			return bad("no directory")
		}
		out.Dir = filepath.Clean(u.Path)
		return s, out, nil
	}
	if u.Host == "" {
		return bad("no bucket name (want %s)", s.Form)
	}
	out.Bucket = u.Host
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if strings.IndexFunc(prefix, func(r rune) bool { return !prefixRune(r) }) >= 0 {
			return bad("prefix %q may hold only A-Z, a-z, 0-9 and - _ . / (as celld requires)", prefix)
		}
		if err := ValidatePrefix(prefix); err != nil {
			return bad("prefix %q: %v", prefix, err)
		}
	}
	out.Prefix = prefix
	return s, out, nil
}

// queryOf returns the URL's query as single values, refusing names the
// scheme did not declare (a typo must not be silently ignored) and
// repeated names.
func queryOf(u *url.URL, s URLScheme) (map[string]string, error) {
	vals, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %v", err)
	}
	out := make(map[string]string, len(vals))
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		switch {
		case len(s.Params) == 0:
			return nil, fmt.Errorf("a %s URL takes no query parameters (got %q)", s.Name, name)
		case !slices.Contains(s.Params, name):
			return nil, fmt.Errorf("unknown parameter %q for %s (known: %s)", name, s.Name, strings.Join(s.Params, ", "))
		case len(vals[name]) != 1:
			return nil, fmt.Errorf("parameter %q given %d times", name, len(vals[name]))
		}
		out[name] = vals[name][0]
	}
	return out, nil
}

// forms lists the registered schemes' URL forms, sorted.
func (m *URLMux) forms() string {
	if len(m.schemes) == 0 {
		return "none"
	}
	var forms []string
	for _, s := range m.schemes {
		forms = append(forms, s.Form)
	}
	slices.Sort(forms)
	return strings.Join(forms, ", ")
}

// validSchemeName: RFC 3986's scheme syntax, in lower case.
func validSchemeName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// prefixRune is celld's alphabet for bucket prefixes.
func prefixRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)
}
