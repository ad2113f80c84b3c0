package r2

import "strings"

// celld stores an R2 key through its object-store library's path type, so
// the key reaches the bucket percent-encoded, segment by segment: every
// byte below 0x20, 0x7F and above, and each of % \ { } ^ ` [ ] " < > ~ # | * ?
// becomes %XX (upper-case hex); an empty segment becomes "%"; a segment
// "." or ".." becomes %2E or %2E%2E. A space stays a space.
// (celld-bucket-format.md §4.7 names the prefix; the encoding is celld's
// object_store path rules, pinned against celld 0.6.1 by other tools.)

func escapable(c byte) bool {
	if c < 0x20 || c >= 0x7f {
		return true
	}
	return strings.IndexByte(`%\{}^`+"`"+`[]"<>~#|*?`, c) >= 0
}

const upperHex = "0123456789ABCDEF"

func encodeBytes(b *strings.Builder, seg string) {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if escapable(c) {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
}

func encodeSegment(b *strings.Builder, seg string) {
	switch seg {
	case "":
		b.WriteByte('%')
	case ".":
		b.WriteString("%2E")
	case "..":
		b.WriteString("%2E%2E")
	default:
		encodeBytes(b, seg)
	}
}

// EncodeKey is the stored form of an R2 key (without the r2/<bucket>/
// prefix), as celld writes it.
func EncodeKey(key string) string {
	var b strings.Builder
	for i, seg := range strings.Split(key, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		encodeSegment(&b, seg)
	}
	return b.String()
}

// encodePrefix is the stored form of a listing prefix: its complete
// segments as in a key, its last (partial) segment byte by byte, so that
// it still matches every key it is a prefix of.
func encodePrefix(prefix string) string {
	segs := strings.Split(prefix, "/")
	var b strings.Builder
	for i, seg := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		if i == len(segs)-1 {
			encodeBytes(&b, seg)
		} else {
			encodeSegment(&b, seg)
		}
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// DecodeKey is the R2 key a stored key (without the r2/<bucket>/ prefix)
// names: the inverse of EncodeKey. A lone "%" is an empty segment; a
// malformed escape (a key another tool wrote) is kept as it is.
func DecodeKey(stored string) string {
	var b strings.Builder
	for i, seg := range strings.Split(stored, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if seg == "%" {
			continue
		}
		for j := 0; j < len(seg); j++ {
			if seg[j] == '%' && j+2 < len(seg) {
				hi, ok1 := unhex(seg[j+1])
				lo, ok2 := unhex(seg[j+2])
				if ok1 && ok2 {
					b.WriteByte(hi<<4 | lo)
					j += 2
					continue
				}
			}
			b.WriteByte(seg[j])
		}
	}
	return b.String()
}
