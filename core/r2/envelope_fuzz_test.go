package r2

import (
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeEnvelope: any "celld-r2" value decodes to a record or is
// refused with an error (typed *MetadataError at the Bucket's boundary),
// never a panic; a record that decodes encodes again, as celld's format,
// to one that decodes to the same record.
func FuzzDecodeEnvelope(f *testing.F) {
	exp := time.UnixMilli(1_700_000_000_000).UTC()
	seed, err := encodeRecord(map[string]string{"a": "b", "ü": "\u2028"}, HTTPMetadata{ContentType: "text/plain", CacheExpiry: exp},
		Checksums{MD5: make([]byte, 16)}, "Standard")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(`{"http":{}}`)
	f.Add(`{"custom":{"k":"v"},"http":{"cacheExpiry":-1},"checksums":{"md5":"zz"}}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, raw string) {
		var o Object
		if err := decodeEnvelope(&o, map[string]string{MetadataName: raw}); err != nil {
			return
		}
		again, err := encodeRecord(o.CustomMetadata, o.HTTPMetadata, o.Checksums, o.StorageClass)
		if err != nil {
			return // a record the store could not hold (e.g. a field too long) is refused on write
		}
		var back Object
		if err := decodeEnvelope(&back, map[string]string{MetadataName: again}); err != nil {
			t.Fatalf("re-encoded record %q does not decode: %v", again, err)
		}
		if len(o.CustomMetadata) == 0 {
			o.CustomMetadata = nil
		}
		if !reflect.DeepEqual(o, back) {
			t.Fatalf("record changed in a round trip:\n%+v\n%+v", o, back)
		}
	})
}
