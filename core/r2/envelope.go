package r2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/cellb/cellb/core/store"
)

// MetadataName is the user-metadata entry holding the record (the Azure
// adapter writes it as "celld_r2", celld's Azure spelling).
const MetadataName = "celld-r2"

// metadataNameAzure is the Azure spelling, accepted from a store that
// returns names unmapped.
const metadataNameAzure = "celld_r2"

// envelope is the record as celld writes it; field order is celld's.
type envelope struct {
	Custom       map[string]string `json:"custom,omitempty"`
	HTTP         envelopeHTTP      `json:"http"` // always written, as celld does
	Checksums    map[string]string `json:"checksums,omitempty"`
	StorageClass string            `json:"storageClass,omitempty"`
}

type envelopeHTTP struct {
	ContentType        string `json:"contentType,omitempty"`
	ContentLanguage    string `json:"contentLanguage,omitempty"`
	ContentDisposition string `json:"contentDisposition,omitempty"`
	ContentEncoding    string `json:"contentEncoding,omitempty"`
	CacheControl       string `json:"cacheControl,omitempty"`
	CacheExpiry        *int64 `json:"cacheExpiry,omitempty"` // Unix ms
}

// checksumNames are the record's checksum names, in R2's order.
var checksumNames = []string{"md5", "sha1", "sha256", "sha384", "sha512"}

// encodeRecord renders the record (custom and HTTP metadata, checksums,
// storage class) as the "celld-r2" value, as celld's serde writes it:
// compact JSON in celld's field order, "http" always present, empty maps
// and absent fields left out, HTML characters left as they are, every
// byte outside printable ASCII escaped.
func encodeRecord(custom map[string]string, h HTTPMetadata, sums Checksums, class string) (string, error) {
	env := envelope{StorageClass: class}
	if len(custom) > 0 {
		env.Custom = custom
	}
	env.HTTP = envelopeHTTP{
		ContentType: h.ContentType, ContentLanguage: h.ContentLanguage,
		ContentDisposition: h.ContentDisposition, ContentEncoding: h.ContentEncoding,
		CacheControl: h.CacheControl,
	}
	if !h.CacheExpiry.IsZero() {
		ms := h.CacheExpiry.UnixMilli()
		env.HTTP.CacheExpiry = &ms
	}
	if m := sums.hexMap(); len(m) > 0 {
		env.Checksums = m
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return "", err
	}
	return asciiEscape(strings.TrimSuffix(buf.String(), "\n")), nil
}

// asciiEscape escapes, in a JSON text, every rune outside printable ASCII
// as \uXXXX (a surrogate pair above U+FFFF). Outside strings JSON has only
// ASCII, and Go's encoder already escaped control characters, so only
// string contents change.
func asciiEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// storeHeaders are the five HTTP fields as the store's own object
// headers, where celld keeps them (the record repeats them in "http").
func storeHeaders(h HTTPMetadata) store.ContentHeaders {
	return store.ContentHeaders{
		ContentType: h.ContentType, ContentLanguage: h.ContentLanguage,
		ContentDisposition: h.ContentDisposition, ContentEncoding: h.ContentEncoding,
		CacheControl: h.CacheControl,
	}
}

// mergeHeaders lays the store's own headers over the fields the record
// gave: a header the store holds wins, a field it lacks keeps the
// record's value (objects whose headers live only in the record, and the
// cache expiry, which is only there). A store's default content type
// (S3, GCS and Azure fill one in for an object put without one) is not
// taken over a record: CellB and celld record the type they were given,
// or none.
func mergeHeaders(o *Object, h store.ContentHeaders, enveloped bool) {
	m := &o.HTTPMetadata
	take := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if !(enveloped && store.DefaultContentType(h.ContentType)) {
		take(&m.ContentType, h.ContentType)
	}
	take(&m.ContentLanguage, h.ContentLanguage)
	take(&m.ContentDisposition, h.ContentDisposition)
	take(&m.ContentEncoding, h.ContentEncoding)
	take(&m.CacheControl, h.CacheControl)
}

// decodeRecord fills o's record from the store's user metadata: the
// "celld-r2" entry (either spelling) when there is one, else the whole
// user metadata as custom metadata.
func decodeRecord(o *Object, md map[string]string, h store.ContentHeaders) error {
	_, enveloped := md[MetadataName]
	if !enveloped {
		_, enveloped = md[metadataNameAzure]
	}
	if err := decodeEnvelope(o, md); err != nil {
		return err
	}
	mergeHeaders(o, h, enveloped)
	return nil
}

// decodeEnvelope fills o's record from the user metadata alone.
func decodeEnvelope(o *Object, md map[string]string) error {
	raw, ok := md[MetadataName]
	if !ok {
		raw, ok = md[metadataNameAzure]
	}
	if !ok {
		o.StorageClass = "Standard"
		if len(md) > 0 {
			o.CustomMetadata = make(map[string]string, len(md))
			for k, v := range md {
				o.CustomMetadata[k] = v
			}
		}
		return nil
	}
	var env envelope
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		return fmt.Errorf("the %s metadata is not a JSON record: %v", MetadataName, err)
	}
	o.CustomMetadata = env.Custom
	o.HTTPMetadata = HTTPMetadata{
		ContentType: env.HTTP.ContentType, ContentLanguage: env.HTTP.ContentLanguage,
		ContentDisposition: env.HTTP.ContentDisposition, ContentEncoding: env.HTTP.ContentEncoding,
		CacheControl: env.HTTP.CacheControl,
	}
	if env.HTTP.CacheExpiry != nil {
		o.HTTPMetadata.CacheExpiry = time.UnixMilli(*env.HTTP.CacheExpiry).UTC()
	}
	sums, err := checksumsFromHex(env.Checksums)
	if err != nil {
		return err
	}
	o.Checksums = sums
	o.StorageClass = env.StorageClass
	if o.StorageClass == "" {
		o.StorageClass = "Standard"
	}
	return nil
}
