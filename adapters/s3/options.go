package s3

import (
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Defaults for large objects. S3 needs parts of at least 5 MiB (except the
// last); 8 MiB parts keep a 64 MiB LTX snapshot to eight requests.
const (
	DefaultMultipartThreshold = 16 << 20
	DefaultPartSize           = 8 << 20
	DefaultPartConcurrency    = 4
	minPartSize               = 5 << 20
)

// Options configure a Store. A Store covers a whole bucket; wrap it with
// store.WithPrefix to keep its keys under a prefix.
type Options struct {
	// Bucket is the bucket name (required).
	Bucket string

	// Endpoint overrides the service URL, for S3-compatible services
	// (R2, Tigris, MinIO, versitygw). Empty means AWS, or whatever the
	// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL variables say.
	Endpoint string
	// Region overrides the region from the environment and shared config.
	Region string
	// UsePathStyle addresses buckets as endpoint/bucket/key rather than
	// bucket.endpoint/key; most self-hosted services need it.
	UsePathStyle bool
	// Credentials overrides the standard AWS credential chain (environment,
	// shared files, SSO, web identity, container and instance roles).
	Credentials aws.CredentialsProvider
	// ChecksumsWhenRequired sends request checksums only where an operation
	// demands them, for S3-compatible services that reject the SDK's
	// default CRC32 checksums.
	ChecksumsWhenRequired bool

	// MultipartThreshold is the size from which Put uploads in parts
	// (default DefaultMultipartThreshold).
	MultipartThreshold int64
	// PartSize is the size of each part (default DefaultPartSize, at
	// least 5 MiB).
	PartSize int64
	// PartConcurrency bounds the parts uploaded at once (default
	// DefaultPartConcurrency).
	PartConcurrency int

	// Logger receives warnings (for instance a failed abort of a multipart
	// upload). Nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults checks o and fills in the zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.Bucket == "" {
		return o, fmt.Errorf("s3: Options.Bucket is empty")
	}
	if o.MultipartThreshold == 0 {
		o.MultipartThreshold = DefaultMultipartThreshold
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < minPartSize {
		return o, fmt.Errorf("s3: Options.PartSize %d is below S3's 5 MiB minimum", o.PartSize)
	}
	if o.MultipartThreshold < o.PartSize {
		return o, fmt.Errorf("s3: Options.MultipartThreshold %d is below PartSize %d", o.MultipartThreshold, o.PartSize)
	}
	if o.PartConcurrency <= 0 {
		o.PartConcurrency = DefaultPartConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
