package fs

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// A continuation token carries the listing's resume point: the smallest
// entry the next page may return. After an object key K that is K+"\x00"
// (keys hold no NUL byte); after a common prefix P it is P with its last
// byte raised by one, which skips every key under P. Tokens are opaque to
// callers; the "1" prefix leaves room for another encoding later.
const tokenPrefix = "1"

func encodeToken(from string) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(from))
}

func decodeToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return "", ErrInvalidToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(raw) == 0 {
		return "", ErrInvalidToken
	}
	return string(raw), nil
}

// after returns the smallest string greater than key in byte order.
func after(key string) string { return key + "\x00" }

// pastPrefix returns the smallest string greater than every string that
// starts with p, and false when there is none (p is empty or all 0xff
// bytes, which UTF-8 keys never are).
func pastPrefix(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// validDelimiter accepts the delimiters a key could contain.
func validDelimiter(d string) bool {
	return utf8.ValidString(d) && strings.IndexByte(d, 0) < 0
}
