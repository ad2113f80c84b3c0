package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/cellb/cellb/core/store"
)

var _ store.Streamer = (*Store)(nil)

// PutFrom implements store.Streamer. Up to BlockThreshold bytes of the
// body are read first; a body that ends there goes in one Put Blob, as Put
// sends it. A longer body is staged in blocks of BlockSize as it is read,
// BlockConcurrency blocks in flight, and becomes visible only when Put
// Block List commits them with the Put's condition. A body that fails, or
// a context that ends, stops before the commit: the staged blocks stay
// uncommitted (Azure discards them) and the blob is as it was.
func (s *Store) PutFrom(ctx context.Context, key string, r io.Reader, size int64, opts store.PutOptions) (store.Version, error) {
	if err := store.CheckPut(ctx, key, opts); err != nil {
		return "", err
	}
	body := store.Body(ctx, r, size)
	head, whole, err := store.ReadHead(key, body, size, s.opts.BlockThreshold)
	switch {
	case err != nil:
		return "", err
	case whole:
		return s.Put(ctx, key, head, opts)
	}
	bb := s.client.NewBlockBlobClient(key)
	return s.commitBlocks(ctx, bb, key, store.ChunksOf(head, s.opts.BlockSize, store.ChunksFrom(body, s.opts.BlockSize)), opts)
}

// NewRangeReader implements store.Streamer with a ranged Get Blob. A read
// of no bytes, or one Azure refuses with 416 (a range from the very end),
// reads the blob's properties instead.
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (*store.Reader, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("%w (offset %d)", store.ErrInvalidRange, offset)}
	}
	bc := s.client.NewBlobClient(key)
	if length != 0 {
		rng := blob.HTTPRange{Offset: offset}
		if length > 0 {
			rng.Count = length
		}
		resp, err := bc.DownloadStream(storedBytes(ctx), &blob.DownloadStreamOptions{Range: rng})
		if err == nil {
			body := resp.Body
			if resp.ETag == nil || *resp.ETag == "" {
				body.Close()
				return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
			}
			var got int64
			if resp.ContentLength != nil {
				got = *resp.ContentLength
			}
			total := got
			if resp.ContentRange != nil && *resp.ContentRange != "" {
				var lo, hi int64
				if _, err := fmt.Sscanf(*resp.ContentRange, "bytes %d-%d/%d", &lo, &hi, &total); err != nil {
					body.Close()
					return nil, &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("azure: unreadable Content-Range %q: %w", *resp.ContentRange, err)}
				}
			}
			n, err := store.CheckRange("get", key, offset, length, total)
			if err == nil && n != got {
				err = &store.OpError{Op: "get", Key: key, Err: fmt.Errorf("azure: asked for %d bytes from %d of %d, got %d", n, offset, total, got)}
			}
			if err != nil {
				body.Close()
				return nil, err
			}
			rd := &store.Reader{
				Key: key, Version: etagVersion(*resp.ETag), Size: total, Metadata: fromAzureMetadata(resp.Metadata),
				Headers: headersOf(resp.ContentType, resp.ContentLanguage, resp.ContentDisposition, resp.ContentEncoding, resp.CacheControl),
				Offset:  offset, Length: n, Body: body,
			}
			if resp.LastModified != nil {
				rd.Modified = *resp.LastModified
			}
			return rd, nil
		}
		if status(err) != http.StatusRequestedRangeNotSatisfiable {
			return nil, readError("get", key, err)
		}
	}
	props, err := bc.GetProperties(ctx, nil)
	if err != nil {
		return nil, readError("get", key, err)
	}
	if props.ETag == nil || *props.ETag == "" {
		return nil, &store.OpError{Op: "get", Key: key, Err: ErrNoVersion}
	}
	var total int64
	if props.ContentLength != nil {
		total = *props.ContentLength
	}
	n, err := store.CheckRange("get", key, offset, length, total)
	if err != nil {
		return nil, err
	}
	if n != 0 {
		return nil, &store.OpError{Op: "get", Key: key, Err: errors.New("azure: the service refused a satisfiable range")}
	}
	rd := &store.Reader{
		Key: key, Version: etagVersion(*props.ETag), Size: total, Metadata: fromAzureMetadata(props.Metadata),
		Headers: headersOf(props.ContentType, props.ContentLanguage, props.ContentDisposition, props.ContentEncoding, props.CacheControl),
		Offset:  offset, Length: 0, Body: http.NoBody,
	}
	if props.LastModified != nil {
		rd.Modified = *props.LastModified
	}
	return rd, nil
}
