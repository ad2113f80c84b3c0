// Package r2 is the R2 binding over the Store port: objects owned by no
// cell, kept in the fleet bucket under r2/<bucket>/<key> in celld's format
// (celld-bucket-format.md §4.7), so a Go service and celld's Workers read
// and write the same objects.
//
// The operations are the Workers R2 binding's, in Go: Head, Get (whole,
// ranged, conditional), Put (conditional, with custom and HTTP metadata and
// verified checksums), Delete (one or many), List and multipart uploads.
// Bodies stream through store.NewRangeReader and store.PutFrom: no call
// holds a whole object in memory.
//
// Storage format. The key is percent-encoded as celld stores it
// (EncodeKey). The body is the object's bytes. The rest of the record is
// one JSON value in the user metadata entry "celld-r2" (the Azure adapter
// stores it as "celld_r2", as celld does), every character outside ASCII
// escaped:
//
//	{"custom":{…},"http":{"contentType":…,"contentLanguage":…,
//	 "contentDisposition":…,"contentEncoding":…,"cacheControl":…,
//	 "cacheExpiry":<ms>},"checksums":{"md5":"<hex>",…},"storageClass":"…"}
//
// with "http" always present and empty maps and absent fields left out.
// A body of at most SinglePutMax bytes is written in one request with its
// MD5 recorded, as celld does. An object without the entry reads
// with its whole user metadata as custom metadata. Version and ETag are the
// store's version (its ETag or generation). See docs/r2.md for what is not
// supported and why.
package r2
