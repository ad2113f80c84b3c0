package s3

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cellb/cellb/core/store"
)

// The content headers are S3's own object headers: sent with PutObject
// and CreateMultipartUpload, returned by GetObject and HeadObject. S3
// stores Content-Encoding as a label only; the SDK does not decompress a
// body whose stored encoding is gzip, so it reads back as it was put.

// optional returns nil for an empty value, so the header is not sent.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return aws.String(v)
}

// headersOf gathers the headers of a response.
func headersOf(contentType, language, disposition, encoding, cacheControl *string) store.ContentHeaders {
	return store.ContentHeaders{
		ContentType:        aws.ToString(contentType),
		ContentLanguage:    aws.ToString(language),
		ContentDisposition: aws.ToString(disposition),
		ContentEncoding:    aws.ToString(encoding),
		CacheControl:       aws.ToString(cacheControl),
	}
}
