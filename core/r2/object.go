package r2

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HTTPMetadata are the five HTTP fields R2 keeps with an object, and the
// cache expiry.
type HTTPMetadata struct {
	ContentType        string
	ContentLanguage    string
	ContentDisposition string
	ContentEncoding    string
	CacheControl       string
	// CacheExpiry is sent as Expires; zero for none. Stored in
	// milliseconds.
	CacheExpiry time.Time
}

func (h HTTPMetadata) isZero() bool {
	return h.ContentType == "" && h.ContentLanguage == "" && h.ContentDisposition == "" &&
		h.ContentEncoding == "" && h.CacheControl == "" && h.CacheExpiry.IsZero()
}

// Checksums are an object's checksums, raw bytes. Put verifies each one
// given against the body before the object is published.
type Checksums struct {
	MD5, SHA1, SHA256, SHA384, SHA512 []byte
}

func (c Checksums) byName() map[string][]byte {
	return map[string][]byte{"md5": c.MD5, "sha1": c.SHA1, "sha256": c.SHA256, "sha384": c.SHA384, "sha512": c.SHA512}
}

func (c Checksums) hexMap() map[string]string {
	out := map[string]string{}
	for name, v := range c.byName() {
		if len(v) > 0 {
			out[name] = hex.EncodeToString(v)
		}
	}
	return out
}

// checksumSizes are the digest sizes of the record's checksums.
var checksumSizes = map[string]int{"md5": 16, "sha1": 20, "sha256": 32, "sha384": 48, "sha512": 64}

func checksumsFromHex(m map[string]string) (Checksums, error) {
	var c Checksums
	for name, h := range m {
		v, err := hex.DecodeString(h)
		if err != nil {
			return c, fmt.Errorf("checksum %s %q is not hex", name, h)
		}
		if want, known := checksumSizes[name]; known && len(v) != want {
			return c, fmt.Errorf("checksum %s is %d bytes, want %d", name, len(v), want)
		}
		switch name {
		case "md5":
			c.MD5 = v
		case "sha1":
			c.SHA1 = v
		case "sha256":
			c.SHA256 = v
		case "sha384":
			c.SHA384 = v
		case "sha512":
			c.SHA512 = v
		}
	}
	return c, nil
}

// Object is an object's record without its body (R2Object).
type Object struct {
	Key string
	// Version is the store's version of the object: its ETag, or its
	// generation on GCS. ETag is the same token without quotes; HTTPETag
	// quotes it.
	Version        string
	ETag           string
	HTTPETag       string
	Size           int64
	Uploaded       time.Time
	HTTPMetadata   HTTPMetadata
	CustomMetadata map[string]string
	Checksums      Checksums
	StorageClass   string
	// Range is the part of the body a ranged Get returns; nil otherwise.
	Range *Range
}

// WriteHTTPMetadata sets the object's HTTP fields on h, as
// R2Object.writeHttpMetadata does.
func (o *Object) WriteHTTPMetadata(h http.Header) {
	m := o.HTTPMetadata
	set := func(name, v string) {
		if v != "" {
			h.Set(name, v)
		}
	}
	set("Content-Type", m.ContentType)
	set("Content-Language", m.ContentLanguage)
	set("Content-Disposition", m.ContentDisposition)
	set("Content-Encoding", m.ContentEncoding)
	set("Cache-Control", m.CacheControl)
	if !m.CacheExpiry.IsZero() {
		h.Set("Expires", m.CacheExpiry.UTC().Format(http.TimeFormat))
	}
}

func etagOf(version string) string { return strings.Trim(version, `"`) }

// ObjectBody is an object with its body (R2ObjectBody). Close it.
type ObjectBody struct {
	*Object
	Body interface {
		Read(p []byte) (int, error)
		Close() error
	}
}

// Read reads the body.
func (o *ObjectBody) Read(p []byte) (int, error) { return o.Body.Read(p) }

// Close releases the body.
func (o *ObjectBody) Close() error { return o.Body.Close() }

// Range selects part of a body: Length bytes from Offset (Length 0: to the
// end), or, when Suffix > 0, the last Suffix bytes.
type Range struct {
	Offset, Length int64
	Suffix         int64
}

// Conditional is R2's onlyIf. Empty fields are not checked. As in HTTP, a
// present EtagMatches makes UploadedBefore ignored, and a present
// EtagDoesNotMatch makes UploadedAfter ignored.
type Conditional struct {
	// EtagMatches holds when the object's ETag equals it ("*": any
	// existing object). Quotes are ignored.
	EtagMatches string
	// EtagDoesNotMatch holds when the object's ETag differs ("*": no
	// object exists).
	EtagDoesNotMatch string
	// UploadedBefore holds when the object was uploaded before it.
	UploadedBefore time.Time
	// UploadedAfter holds when the object was uploaded after it.
	UploadedAfter time.Time
}

// check returns "" when c holds for o (nil: no object), else the name of
// the condition that failed.
func (c *Conditional) check(o *Object) string {
	if c == nil {
		return ""
	}
	etagIs := func(want string) bool {
		if o == nil {
			return false
		}
		return want == "*" || etagOf(want) == o.ETag
	}
	if c.EtagMatches != "" {
		if !etagIs(c.EtagMatches) {
			return "etagMatches"
		}
	} else if !c.UploadedBefore.IsZero() && o != nil && !o.Uploaded.Before(c.UploadedBefore) {
		return "uploadedBefore"
	}
	if c.EtagDoesNotMatch != "" {
		if etagIs(c.EtagDoesNotMatch) {
			return "etagDoesNotMatch"
		}
	} else if !c.UploadedAfter.IsZero() && o != nil && !o.Uploaded.After(c.UploadedAfter) {
		return "uploadedAfter"
	}
	return ""
}
