package store

import "context"

// DataGetter is implemented by stores that can read an object's body and
// version in fewer requests when the caller needs neither its metadata nor
// its content headers. On GCS a full Get takes two requests (the object's
// attributes, then the body of exactly that generation: a download carries
// neither Content-Language nor Content-Disposition nor user metadata); a
// body-and-version read is one. The fleet reads its records (own.json
// before every acknowledgement, node leases) this way.
//
// GetData follows every rule of Get for Data, Version and Modified, and for
// errors (ErrNotFound for a missing key); Metadata and Headers of the
// result may be empty even when the object has them.
type DataGetter interface {
	GetData(ctx context.Context, key string) (*Object, error)
}

// GetData reads key's body and version: through the store's DataGetter
// when it has one, otherwise with Get.
func GetData(ctx context.Context, s Store, key string) (*Object, error) {
	if g, ok := s.(DataGetter); ok {
		return g.GetData(ctx, key)
	}
	return s.Get(ctx, key)
}
