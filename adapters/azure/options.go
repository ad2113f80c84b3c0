package azure

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Defaults for large blobs: from BlockThreshold bytes on, a Put stages
// BlockSize blocks and commits them with Put Block List.
const (
	DefaultBlockThreshold   = 16 << 20
	DefaultBlockSize        = 8 << 20
	DefaultBlockConcurrency = 4
	maxBlockSize            = 4000 << 20 // Azure's largest block
)

// Options configure a Store. A Store covers a whole container; wrap it
// with store.WithPrefix to keep its keys under a prefix.
//
// Credentials, in order of precedence: ConnectionString; Account with
// AccountKey (shared key); Credential; otherwise azidentity's default
// chain (environment, workload identity, managed identity, Azure CLI).
// Set exactly one of the first three, or none.
type Options struct {
	// Container is the container name (required).
	Container string
	// ServiceURL is the account's blob endpoint, such as
	// "https://myaccount.blob.core.windows.net/" (the default, built from
	// Account) or Azurite's "http://127.0.0.1:10000/devstoreaccount1".
	ServiceURL string
	// Account is the storage account name.
	Account string
	// AccountKey is the account's shared key (base64), used with Account.
	AccountKey string
	// ConnectionString is a storage connection string; it names the
	// endpoint and the credentials itself.
	ConnectionString string
	// Credential is a Microsoft Entra ID credential from azidentity or
	// elsewhere.
	Credential azcore.TokenCredential

	// BlockThreshold is the size from which Put uploads in blocks
	// (default DefaultBlockThreshold).
	BlockThreshold int64
	// BlockSize is the size of each block (default DefaultBlockSize).
	BlockSize int64
	// BlockConcurrency bounds the blocks staged at once (default
	// DefaultBlockConcurrency).
	BlockConcurrency int

	// ClientOptions tune the SDK's pipeline (retries, transport, logging).
	// Conditional writes turn retries off whatever they say.
	ClientOptions *container.ClientOptions

	// Logger receives warnings. Nil means slog.Default().
	Logger *slog.Logger
}

var errOptions = errors.New("azure: bad options")

func (o Options) withDefaults() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("%w: %s", errOptions, fmt.Sprintf(format, args...))
	}
	if o.Container == "" {
		return bad("Container is empty")
	}
	set := 0
	for _, b := range []bool{o.ConnectionString != "", o.AccountKey != "", o.Credential != nil} {
		if b {
			set++
		}
	}
	if set > 1 {
		return bad("set only one of ConnectionString, AccountKey and Credential")
	}
	if o.ConnectionString != "" && o.ServiceURL != "" {
		return bad("a ConnectionString names its own endpoint; leave ServiceURL empty")
	}
	if o.AccountKey != "" && o.Account == "" {
		return bad("AccountKey needs Account")
	}
	if o.ConnectionString == "" {
		if o.ServiceURL == "" {
			if o.Account == "" {
				return bad("set ServiceURL or Account (or ConnectionString)")
			}
			o.ServiceURL = "https://" + o.Account + ".blob.core.windows.net/"
		}
		u, err := url.Parse(o.ServiceURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return bad("ServiceURL %q is not an http(s) URL", o.ServiceURL)
		}
	}
	if o.BlockThreshold == 0 {
		o.BlockThreshold = DefaultBlockThreshold
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockSize < 0 || o.BlockSize > maxBlockSize {
		return bad("BlockSize %d is outside 1 byte to 4000 MiB", o.BlockSize)
	}
	if o.BlockThreshold < o.BlockSize {
		return bad("BlockThreshold %d is below BlockSize %d", o.BlockThreshold, o.BlockSize)
	}
	if o.BlockConcurrency <= 0 {
		o.BlockConcurrency = DefaultBlockConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// containerURL is ServiceURL/Container.
func (o Options) containerURL() string {
	return strings.TrimSuffix(o.ServiceURL, "/") + "/" + url.PathEscape(o.Container)
}
