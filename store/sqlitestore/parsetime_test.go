package sqlitestore

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestParseStored: the fast path reads back every stored time as
// time.Parse does, to the nanosecond and location.
func TestParseStored(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for range 20000 {
		want := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC()
		s := formatTime(want)
		got, ok := parseStored(s)
		if !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("parseStored(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2024-02-30T00:00:00.000000000Z", "2023-02-29T00:00:00.000000000Z", "0000-01-01T00:00:00.000000000Z",
		"2024-13-01T00:00:00.000000000Z", "2024-01-01T24:00:00.000000000Z", "2024-01-01T00:00:60.000000000Z",
		"2024-01-01T00:00:00.000000000+", "2024-01-01 00:00:00.000000000Z", "2024-01-01T00:00:00.00000000xZ", "+024-01-01T00:00:00.000000000Z"} {
		if got, ok := parseStored(s); ok {
			t.Errorf("parseStored(%q) = %v, want refused", s, got)
		}
	}
	if got, ok := parseStored("2024-02-29T23:59:59.999999999Z"); !ok || got != time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC) {
		t.Errorf("leap day: %v, %v", got, ok)
	}
}

// TestFormatTime: the fast path writes every time as time.Format does,
// in any location, years 0-9999 and beyond.
func TestFormatTime(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := time.Date(-2, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(10001, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	zones := []*time.Location{time.UTC, time.FixedZone("", -(13*3600 + 45*60)), time.FixedZone("", 14*3600)}
	for i := range 50000 {
		at := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).In(zones[i%len(zones)])
		if got, want := formatTime(at), at.UTC().Format(timeLayout); got != want {
			t.Fatalf("formatTime(%v) = %q, want %q", at, got, want)
		}
	}
	for _, at := range []time.Time{{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(2024, 2, 29, 0, 0, 0, 1, time.UTC)} {
		if got, want := formatTime(at), at.UTC().Format(timeLayout); got != want {
			t.Errorf("formatTime(%v) = %q, want %q", at, got, want)
		}
	}
}

// FuzzParseStored: whatever the fast path accepts, time.Parse accepts and
// reads as the same instant.
func FuzzParseStored(f *testing.F) {
	f.Add("2024-02-29T23:59:59.999999999Z")
	f.Add("0001-01-01T00:00:00.000000000Z")
	f.Add("9999-12-31T23:59:59.999999999Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseStored(s)
		want, err := time.Parse(timeLayout, s)
		if ok && (err != nil || !got.Equal(want) || got.Location() != want.Location()) {
			t.Fatalf("parseStored(%q) = %v; time.Parse = %v, %v", s, got, want, err)
		}
	})
}

func BenchmarkFormatTime(b *testing.B) {
	at := time.Date(2024, 5, 8, 13, 56, 1, 123456789, time.UTC)
	b.Run("stored", func(b *testing.B) {
		for b.Loop() {
			_ = formatTime(at)
		}
	})
	b.Run("time.Format", func(b *testing.B) {
		for b.Loop() {
			_ = at.UTC().Format(timeLayout)
		}
	})
}

func BenchmarkParseTime(b *testing.B) {
	s := formatTime(time.Date(2024, 5, 8, 13, 56, 1, 123456789, time.UTC))
	b.Run("stored", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseStored(s); !ok {
				b.Fatal(s)
			}
		}
	})
	b.Run("time.Parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := time.Parse(timeLayout, s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
