package azure

import (
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/cellb/cellb/core/store"
)

// The content headers are the blob's HTTP headers (x-ms-blob-content-*),
// sent with the upload or the commit of the block list and returned by
// every download and GetProperties. Azure only records Content-Encoding,
// so a gzip body reads back as it was put.

// httpHeaders returns h as the blob's HTTP headers, or nil for none.
func httpHeaders(h store.ContentHeaders) *blob.HTTPHeaders {
	if h.IsZero() {
		return nil
	}
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	return &blob.HTTPHeaders{
		BlobContentType: opt(h.ContentType), BlobContentLanguage: opt(h.ContentLanguage),
		BlobContentDisposition: opt(h.ContentDisposition), BlobContentEncoding: opt(h.ContentEncoding),
		BlobCacheControl: opt(h.CacheControl),
	}
}

// headersOf gathers the headers of a response.
func headersOf(contentType, language, disposition, encoding, cacheControl *string) store.ContentHeaders {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return store.ContentHeaders{
		ContentType: s(contentType), ContentLanguage: s(language), ContentDisposition: s(disposition),
		ContentEncoding: s(encoding), CacheControl: s(cacheControl),
	}
}

// storedBytes makes a download ask for the body as stored. Without an
// Accept-Encoding of its own, Go's transport asks for gzip and then
// decompresses a blob whose Content-Encoding is gzip (dropping that header
// and the length): the body would not be the one put.
func storedBytes(ctx context.Context) context.Context {
	return policy.WithHTTPHeader(ctx, http.Header{"Accept-Encoding": []string{"identity"}})
}
