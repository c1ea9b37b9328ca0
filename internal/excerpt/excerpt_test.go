package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"IMAGE", `"IMAGE"`},
		{"a\"b\n", `"a\"b\n"`},
		{strings.Repeat("x", Max), `"` + strings.Repeat("x", Max) + `"`},
		{strings.Repeat("1234567890", 100000), `"12345678901234567890123456789012…" (1000000 bytes)`},
		// Cut before a character that straddles the Keep boundary.
		{strings.Repeat("x", Keep-1) + strings.Repeat("é", 40), `"` + strings.Repeat("x", Keep-1) + `…" (111 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.80q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// Control characters expand under quoting, but only Keep of them.
	if got := Quote(strings.Repeat("\x00", 1<<20)); len(got) > 4*Keep+40 {
		t.Errorf("Quote of 1 MiB of NULs is %d bytes", len(got))
	}
}

func TestCut(t *testing.T) {
	if got := Cut("short", 10); got != "short" {
		t.Errorf("Cut(short) = %q", got)
	}
	got := Cut(strings.Repeat("é", 100), 11)
	if !utf8.ValidString(got) || got != strings.Repeat("é", 5)+"… (190 more bytes)" {
		t.Errorf("Cut = %q", got)
	}
}
