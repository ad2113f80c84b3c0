package gcs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/cellb/cellb/core/store"
)

// Copy implements store.Driver with GCS's rewrite, which copies inside
// the service, called again with the rewriteToken it answers until it says
// it is done (a large object across locations or storage classes takes
// several calls; within one bucket it is usually one). The destination
// carries ifGenerationMatch=0, so an existing object is never replaced
// (412), and every call is sent once, like every conditional write. The
// request has no destination resource, so the rewrite keeps the source's
// metadata and content headers. With Options.StreamCopies it answers
// ErrCopyUnsupported and the Bucket streams the copy.
func (d *driver) Copy(ctx context.Context, src, dst string) (store.Version, error) {
	if d.streamCopies {
		return "", store.ErrCopyUnsupported
	}
	base := d.objectURL(src) + "/rewriteTo/b/" + escape(d.bucket) + "/o/" + escape(dst)
	var token string
	for {
		q := url.Values{"ifGenerationMatch": {"0"}}
		if token != "" {
			q.Set("rewriteToken", token)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"?"+q.Encode(), http.NoBody)
		if err != nil {
			return "", err
		}
		res, err := d.send(opCopy, req, http.StatusOK)
		if err != nil {
			return "", err
		}
		var out struct {
			Done         bool     `json:"done"`
			RewriteToken string   `json:"rewriteToken"`
			Resource     resource `json:"resource"`
		}
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if err != nil {
			return "", fmt.Errorf("gcs: decoding the rewrite's answer: %w", err)
		}
		if out.Done {
			return out.Resource.version()
		}
		if out.RewriteToken == "" {
			return "", fmt.Errorf("gcs: the rewrite is not done and gave no rewriteToken")
		}
		token = out.RewriteToken
	}
}
