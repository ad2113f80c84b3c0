package azure

import "strings"

// Azure metadata names must be C# identifiers, so '-' cannot appear in
// them. Like celld (litestream-timestamp is stored as
// litestream_timestamp), the adapter writes '_' for '-' and reads it back
// the other way. CellB's names never contain '_' (store.ValidateMetadata),
// so the mapping is one to one.

func toAzureMetadata(md map[string]string) map[string]*string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]*string, len(md))
	for k, v := range md {
		out[strings.ReplaceAll(k, "-", "_")] = &v
	}
	return out
}

// fromAzureMetadata also lower-cases names: the service keeps their case
// but HTTP header handling may not.
func fromAzureMetadata(md map[string]*string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		if v == nil {
			continue
		}
		out[strings.ReplaceAll(strings.ToLower(k), "_", "-")] = *v
	}
	return out
}
