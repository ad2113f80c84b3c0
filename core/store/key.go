package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key CellB writes or accepts (S3's limit).
const MaxKeyLen = 1024

// ValidateKey checks a key against the rules every adapter enforces, so a key
// that works on one bucket works on all of them and can be laid out as a
// relative path on a local disk: 1 to MaxKeyLen bytes of valid UTF-8,
// '/'-separated segments that are neither empty, "." nor "..", no leading
// '/', no NUL byte and no backslash.
func ValidateKey(key string) error {
	bad := func(why string) error {
		return &OpError{Op: "validate", Key: key, Err: fmt.Errorf("%w: %s", ErrInvalidKey, why)}
	}
	switch {
	case key == "":
		return bad("empty key")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.IndexByte(key, 0) >= 0:
		return bad("contains a NUL byte")
	case strings.IndexByte(key, '\\') >= 0:
		return bad("contains a backslash")
	case strings.HasPrefix(key, "/"):
		return bad("absolute path (leading '/')")
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad(fmt.Sprintf("%q path segment", seg))
		}
	}
	return nil
}

// ValidatePrefix checks a listing prefix: empty, or a key prefix whose
// complete segments follow ValidateKey's rules (a trailing '/' is allowed).
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return &OpError{Op: "validate", Key: prefix, Err: fmt.Errorf("%w: prefix is only '/'", ErrInvalidKey)}
	}
	return ValidateKey(p)
}

// ValidateMetadata checks metadata names and values. Names are 1 to 64
// characters of lower-case ASCII letters, digits and '-', starting with a
// letter (Azure adapters map '-' to '_', as celld does for
// litestream-timestamp); values are printable ASCII up to 1024 bytes. The
// whole map is at most 2 KiB, the lowest common limit of the clouds.
func ValidateMetadata(md map[string]string) error {
	total := 0
	for k, v := range md {
		if err := validMetaName(k); err != nil {
			return err
		}
		if len(v) > 1024 {
			return fmt.Errorf("%w: value of %q is longer than 1024 bytes", ErrInvalidMetadata, k)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return fmt.Errorf("%w: value of %q has a byte outside printable ASCII", ErrInvalidMetadata, k)
			}
		}
		total += len(k) + len(v)
	}
	if total > 2048 {
		return fmt.Errorf("%w: %d bytes in all, more than 2048", ErrInvalidMetadata, total)
	}
	return nil
}

func validMetaName(k string) error {
	if k == "" || len(k) > 64 {
		return fmt.Errorf("%w: name %q must be 1 to 64 characters", ErrInvalidMetadata, k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := (c >= 'a' && c <= 'z') || (i > 0 && ((c >= '0' && c <= '9') || c == '-'))
		if !ok {
			return fmt.Errorf("%w: name %q may hold only a-z, 0-9 and '-', starting with a letter", ErrInvalidMetadata, k)
		}
	}
	return nil
}
