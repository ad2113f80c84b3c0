package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/cellb/cellb/core/store"
)

// NewRangeReader is a ranged Get Blob; the Bucket checks the range against
// the Size it reports and holds the body to the range's length. Azure has
// no empty range: a read of no bytes, or one refused with 416 (a range from
// the very end of the blob), reads the blob's properties instead. The
// download carries metadata and headers anyway, so dataOnly saves nothing.
func (d *driver) NewRangeReader(ctx context.Context, key string, offset, length int64, _ bool) (*store.Reader, error) {
	bc := d.client.NewBlobClient(key)
	refused := false
	if length != 0 {
		rng := blob.HTTPRange{Offset: offset}
		if length > 0 {
			rng.Count = length
		}
		resp, err := bc.DownloadStream(storedBytes(ctx), &blob.DownloadStreamOptions{Range: rng})
		if err == nil {
			return downloaded(resp, offset)
		}
		if d.Classify(err).Kind != store.KindInvalidRange {
			return nil, err
		}
		refused = true
	}
	p, err := bc.GetProperties(ctx, nil)
	if err != nil {
		return nil, err
	}
	size := deref(p.ContentLength)
	if refused && offset < size {
		return nil, errors.New("azure: the service refused a satisfiable range")
	}
	return &store.Reader{
		Version: version(p.ETag), Size: size, Metadata: fromAzureMetadata(p.Metadata),
		Headers:  headersOf(p.ContentType, p.ContentLanguage, p.ContentDisposition, p.ContentEncoding, p.CacheControl),
		Modified: deref(p.LastModified), Body: http.NoBody,
	}, nil
}

// downloaded is the Reader of a download from offset. The blob's size is
// Content-Range's total, or without a range the body's length.
func downloaded(resp blob.DownloadStreamResponse, offset int64) (*store.Reader, error) {
	size := deref(resp.ContentLength)
	if cr := deref(resp.ContentRange); cr != "" {
		var lo, hi int64
		if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &lo, &hi, &size); err != nil || lo != offset {
			resp.Body.Close()
			return nil, fmt.Errorf("azure: Content-Range %q does not answer a read from %d", cr, offset)
		}
	}
	return &store.Reader{
		Version: version(resp.ETag), Size: size, Metadata: fromAzureMetadata(resp.Metadata),
		Headers:  headersOf(resp.ContentType, resp.ContentLanguage, resp.ContentDisposition, resp.ContentEncoding, resp.CacheControl),
		Modified: deref(resp.LastModified), Body: resp.Body,
	}, nil
}
