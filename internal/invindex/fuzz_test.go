package invindex

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the loader: it must never panic,
// refuse anything but a valid index with a bad-input error, and a file
// it accepts must be valid and encode back to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, ix := range testIndexes(f) {
		data := encode(f, ix)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte("1 2 3\n"))
	f.Add(Magic[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Decode(data, "fuzz")
		if err != nil {
			if !badInput(err) || !strings.Contains(err.Error(), "fuzz") {
				t.Fatalf("error %v is not a bad-input error naming the file", err)
			}
			return
		}
		if err := ix.Validate(); err != nil {
			t.Fatalf("accepted an invalid index: %v", err)
		}
		if again := encode(t, ix); !bytes.Equal(again, data) {
			t.Fatal("accepted bytes that do not re-encode the same")
		}
	})
}

// FuzzFromText builds indexes of arbitrary text and checks them against
// the reference tokenizer.
func FuzzFromText(f *testing.F) {
	for _, s := range []string{"", "a\nb", "Hello, World!\n\nhello", "x\x00Y\r\nz\xff1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ix, err := FromText(strings.NewReader(text), "fuzz", BuildOptions{DenseRatio: 2}, 0)
		if err != nil {
			if len(text) > 1 && text[0] == 0x1f && text[1] == 0x8b {
				return // gzip magic: a broken stream is an error
			}
			t.Fatal(err)
		}
		if len(text) > 1 && text[0] == 0x1f && text[1] == 0x8b {
			return
		}
		checkText(t, ix, text)
	})
}
