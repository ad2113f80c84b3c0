package store

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateHeaders(t *testing.T) {
	good := ContentHeaders{ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `attachment; filename="a b.png"; filename*=UTF-8''a%20b.png`,
		ContentEncoding: "gzip", CacheControl: strings.Repeat("x", MaxHeaderLen)}
	if err := ValidateHeaders(good); err != nil {
		t.Fatalf("%+v: %v", good, err)
	}
	for _, bad := range []ContentHeaders{
		{ContentType: "a\r\nb"},
		{ContentLanguage: "é"},
		{ContentDisposition: " inline"},
		{ContentEncoding: "gzip "},
		{CacheControl: strings.Repeat("x", MaxHeaderLen+1)},
		{ContentType: "a\x00"},
	} {
		err := ValidateHeaders(bad)
		if !errors.Is(err, ErrInvalidHeaders) {
			t.Errorf("%+v: %v, want ErrInvalidHeaders", bad, err)
		}
		if err := ValidatePutOptions(PutOptions{Headers: bad}); !errors.Is(err, ErrInvalidHeaders) {
			t.Errorf("put options with %+v: %v", bad, err)
		}
	}
	if !(ContentHeaders{}).IsZero() || good.IsZero() {
		t.Error("IsZero")
	}
}
