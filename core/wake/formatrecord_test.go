package wake

import (
	"errors"
	"slices"
	"testing"

	"github.com/cellb/cellb/core/layout"
)

// The goldens are serde_json::to_vec of celld's FormatRecord, whose
// migrating member is skipped when false.
func TestFormatRecordEncodeGolden(t *testing.T) {
	for _, tc := range []struct {
		r    FormatRecord
		want string
	}{
		{FormatRecord{Format: 2}, `{"format":2}`},
		{FormatRecord{Format: 2, Migrating: true}, `{"format":2,"migrating":true}`},
	} {
		got := tc.r.Encode()
		if string(got) != tc.want {
			t.Errorf("Encode() = %s, want %s", got, tc.want)
		}
		if back, err := DecodeFormat(got); err != nil || back != tc.r {
			t.Errorf("DecodeFormat(%s) = %+v, %v", got, back, err)
		}
	}
}

func TestDecodeFormat(t *testing.T) {
	for body, want := range map[string]FormatRecord{
		`{"format":2}`:                    {Format: 2},
		`{"format":2,"migrating":false}`:  {Format: 2},
		`{"migrating":true,"format":2}`:   {Format: 2, Migrating: true},
		`{"format":3}`:                    {Format: 3}, // decodes; CheckFormat refuses it
		`{"format":0}`:                    {Format: 0},
		`{"format":255,"migrating":true}`: {Format: 255, Migrating: true},
	} {
		if got, err := DecodeFormat([]byte(body)); err != nil || got != want {
			t.Errorf("DecodeFormat(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
	for _, body := range []string{
		`{}`,
		`{"migrating":true}`,
		`{"format":256}`,
		`{"format":-1}`,
		`{"format":2.0}`,
		`{"format":"2"}`,
		`{"format":null}`,
		`{"format":2,"migrating":null}`,
		`{"format":2,"migrating":1}`,
		`{"format":2,"migrating":"true"}`,
		`{"format":2,"x":0}`,
		`{"format":2,"format":2}`,
		`{"format":2}{"format":2}`,
		`[2]`,
		`2`,
	} {
		_, err := DecodeFormat([]byte(body))
		var re *layout.RecordError
		if !errors.As(err, &re) || re.Key != layout.WakeFormatKey {
			t.Errorf("DecodeFormat(%s) = %v, want a *layout.RecordError", body, err)
		}
	}
}

func TestCheckFormat(t *testing.T) {
	ready := &FormatRecord{Format: 2}
	migrating := &FormatRecord{Format: 2, Migrating: true}
	other := &FormatRecord{Format: 3, Migrating: true}
	for _, tc := range []struct {
		name   string
		rec    *FormatRecord
		legacy []string
		want   FormatAction
		block  FormatBlock
	}{
		{"ready", ready, nil, FormatReady, 0},
		{"ready ignores the legacy scan", ready, []string{layout.WakeEntriesPrefix}, FormatReady, 0},
		{"migrating is resumed", migrating, nil, FormatResume, 0},
		{"fresh bucket", nil, nil, FormatInitialize, 0},
		{"experimental marker", nil, []string{layout.WakeLegacyFormatKey}, 0, BlockUnmarkedData},
		{"unmarked entries", nil, []string{layout.WakeEntriesPrefix}, 0, BlockUnmarkedData},
		{"unmarked v2 data", nil, []string{"wake-v2/", "wake-retired-v2/"}, 0, BlockUnmarkedData},
		{"other format", other, nil, 0, BlockOtherFormat},
		{"format 1", &FormatRecord{Format: 1}, nil, 0, BlockOtherFormat},
	} {
		got, err := CheckFormat(tc.rec, tc.legacy)
		if tc.block == 0 {
			if err != nil || got != tc.want {
				t.Errorf("%s: CheckFormat = %v, %v; want %v", tc.name, got, err, tc.want)
			}
			continue
		}
		var fe *FormatBlockedError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFormatBlocked) || fe.Block != tc.block {
			t.Errorf("%s: CheckFormat = %v, %v; want block %v", tc.name, got, err, tc.block)
			continue
		}
		if tc.block == BlockUnmarkedData && !slices.Equal(fe.Found, tc.legacy) {
			t.Errorf("%s: Found = %v, want %v", tc.name, fe.Found, tc.legacy)
		}
		if tc.block == BlockOtherFormat && fe.Format != tc.rec.Format {
			t.Errorf("%s: Format = %d, want %d", tc.name, fe.Format, tc.rec.Format)
		}
		if fe.Error() == "" {
			t.Errorf("%s: empty message", tc.name)
		}
	}
}

func TestUnmarkedDataPrefixes(t *testing.T) {
	want := []string{"wake-v2/", "wake-retired-v2/", "wake/entries/", "wake/retired/"}
	got := layout.WakeUnmarkedDataPrefixes()
	if !slices.Equal(got, want) {
		t.Fatalf("layout.WakeUnmarkedDataPrefixes() = %v, want %v", got, want)
	}
	got[0] = "changed"
	if layout.WakeUnmarkedDataPrefixes()[0] != want[0] {
		t.Error("layout.WakeUnmarkedDataPrefixes shares its slice")
	}
}
