package gcs

import (
	"context"
	"errors"
	"net/http"
)

// Delete implements store.Driver: a missing object is success, a missing
// bucket is not.
func (d *driver) Delete(ctx context.Context, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, d.objectURL(key), nil)
	if err != nil {
		return err
	}
	res, err := d.send(opDelete, req, http.StatusNoContent, http.StatusOK)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && !ae.missingBucket() {
		return nil
	}
	if err != nil {
		return err
	}
	drain(res)
	return nil
}
