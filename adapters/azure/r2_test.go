package azure_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/cellb/cellb/adapters/azure"
	"github.com/cellb/cellb/conformance/r2test"
	"github.com/cellb/cellb/core/r2"
)

// TestR2Conformance runs the R2 binding's suite (core/r2 in celld's
// format) over Azurite.
func TestR2Conformance(t *testing.T) {
	r2test.Run(t, r2test.Harness{Store: openServer(t, nil)})
}

// TestR2AzureSpelling: celld stores the record as celld_r2 on Azure. An
// object written that way by another Azure client reads back with its
// record, and the binding's own record is celld_r2 on the wire.
func TestR2AzureSpelling(t *testing.T) {
	ctx := t.Context()
	raw, err := azure.New(ctx, serverOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	bucket := "azr2-" + randomHex(6)
	key := "r2/" + bucket + "/fixture"
	rec := `{"custom":{"owner":"ren\u00e9"},"http":{"contentType":"image/png","cacheExpiry":1780109201091},"storageClass":"Standard"}`
	if _, err := raw.Client().NewBlockBlobClient(key).UploadBuffer(ctx, []byte("a"), &blockblob.UploadBufferOptions{
		Metadata: map[string]*string{"celld_r2": &rec},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw.Delete(context.Background(), key)
		raw.Delete(context.Background(), "r2/"+bucket+"/mine")
	})
	b, err := r2.New(raw, bucket)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.Head(ctx, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	if h.CustomMetadata["owner"] != "rené" || h.HTTPMetadata.ContentType != "image/png" || h.HTTPMetadata.CacheExpiry.UnixMilli() != 1780109201091 {
		t.Errorf("celld's Azure object read as %+v", h)
	}
	if _, err := b.Put(ctx, "mine", strings.NewReader("b"), r2.PutOptions{CustomMetadata: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	props, err := raw.Client().NewBlobClient("r2/"+bucket+"/mine").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for k, v := range props.Metadata {
		if strings.EqualFold(k, "celld_r2") && v != nil && strings.Contains(*v, `"custom":{"k":"v"}`) {
			found = true
		}
	}
	if !found {
		t.Errorf("stored metadata %v, want celld_r2", props.Metadata)
	}
}

// TestR2CelldHeadersOnAzure: an object as celld writes it on Azure — the
// five HTTP fields as the blob's own HTTP headers, the record (only the
// cache expiry besides custom metadata) as celld_r2 — written by a plain
// Azure client, reads back with every field; and the binding's own puts
// set the blob's HTTP headers on the wire.
func TestR2CelldHeadersOnAzure(t *testing.T) {
	ctx := t.Context()
	raw, err := azure.New(ctx, serverOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	bucket := "azr2h-" + randomHex(6)
	key := "r2/" + bucket + "/cat.png"
	rec := `{"custom":{"owner":"ren\u00e9"},"http":{"cacheExpiry":1780109201091},"storageClass":"Standard"}`
	s := func(v string) *string { return &v }
	if _, err := raw.Client().NewBlockBlobClient(key).UploadBuffer(ctx, []byte("a"), &blockblob.UploadBufferOptions{
		Metadata: map[string]*string{"celld_r2": &rec},
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: s("image/png"), BlobContentLanguage: s("en-GB"),
			BlobContentDisposition: s(`inline; filename="cat.png"`), BlobContentEncoding: s("identity"), BlobCacheControl: s("max-age=60")},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw.Delete(context.Background(), key)
		raw.Delete(context.Background(), "r2/"+bucket+"/mine")
	})
	b, err := r2.New(raw, bucket)
	if err != nil {
		t.Fatal(err)
	}
	want := r2.HTTPMetadata{ContentType: "image/png", ContentLanguage: "en-GB", ContentDisposition: `inline; filename="cat.png"`,
		ContentEncoding: "identity", CacheControl: "max-age=60", CacheExpiry: time.UnixMilli(1780109201091).UTC()}
	h, err := b.Head(ctx, "cat.png")
	if err != nil {
		t.Fatal(err)
	}
	if h.HTTPMetadata != want || h.CustomMetadata["owner"] != "rené" {
		t.Errorf("celld's Azure object read as %+v, want HTTP metadata %+v", h, want)
	}
	if _, err := b.Put(ctx, "mine", strings.NewReader("b"), r2.PutOptions{HTTPMetadata: want}); err != nil {
		t.Fatal(err)
	}
	props, err := raw.Client().NewBlobClient("r2/"+bucket+"/mine").GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.ContentType == nil || *props.ContentType != "image/png" || props.ContentDisposition == nil || *props.ContentDisposition != want.ContentDisposition ||
		props.CacheControl == nil || *props.CacheControl != "max-age=60" {
		t.Errorf("the blob's HTTP headers: type %v disposition %v cache %v", props.ContentType, props.ContentDisposition, props.CacheControl)
	}
}
