// Package excerpt quotes text from a model's config or files in error
// messages, cut to a short prefix. A load error goes back whole to whoever
// asked for the load and into the server's log (Triton writes it twice),
// so a value of a megabyte must not come back as one.
package excerpt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is the longest text, in bytes, quoted whole; longer text is cut to
// its first Keep bytes. Real names and values are far shorter.
const (
	Max  = 64
	Keep = 32
)

// Quote is strconv.Quote for text of at most Max bytes and, for longer
// text, its first Keep bytes (cut at a character boundary), an ellipsis
// and the length: "123456789012…" (1000000 bytes).
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(prefix(s)+"…"), len(s))
}

// Cut is s when it is at most max bytes, else its first max bytes (at a
// character boundary) and a note of how much was left out: for messages
// that embed text from elsewhere (a parser's error) whose parts cannot be
// quoted one by one.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:n], len(s)-n)
}

func prefix(s string) string {
	n := Keep
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// List joins names for a message: the first show of them, each cut to Max
// bytes, and how many more there are; "none" for no names. A definition
// may have hundreds of long names, which a message must not repeat.
func List(names []string, show int) string {
	if len(names) == 0 {
		return "none"
	}
	n := min(len(names), show)
	cut := make([]string, n)
	for i, name := range names[:n] {
		cut[i] = Cut(name, Max)
	}
	if len(names) > show {
		return strings.Join(cut, ", ") + fmt.Sprintf(", … (%d more)", len(names)-show)
	}
	return strings.Join(cut, ", ")
}
