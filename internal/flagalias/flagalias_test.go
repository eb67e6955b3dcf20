package flagalias

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func parse(args ...string) (string, error) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	technique := fs.String("technique", "auto", "technique `NAME`")
	Declare(fs, "technique", "engine")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	err := Resolve(fs)
	return *technique, err
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "auto"},
		{[]string{"--technique", "eclat"}, "eclat"},
		{[]string{"--engine", "eclat"}, "eclat"},
		{[]string{"--engine", "eclat", "--technique", "eclat"}, "eclat"},
		{[]string{"--engine=apriori", "--engine", "eclat"}, "eclat"}, // the last wins, as for any flag
	} {
		got, err := parse(tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{"--engine", "eclat", "--technique", "apriori"},
		{"--technique", "apriori", "--engine", "eclat"},
		{"--technique", "auto", "--engine", "eclat"}, // given is given, even as the default
	} {
		if _, err := parse(args...); err == nil || !strings.Contains(err.Error(), "--engine") || !strings.Contains(err.Error(), "--technique") {
			t.Errorf("%q: %v, want an error naming both flags", args, err)
		}
	}
}

func TestHelp(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("technique", "auto", "technique `NAME`")
	Declare(fs, "technique", "engine")
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	want := "  -engine NAME\n    \tsame as --technique NAME (its old name)\n  -technique NAME\n    \ttechnique NAME (default \"auto\")\n"
	if b.String() != want {
		t.Errorf("help:\n%s\nwant:\n%s", b.String(), want)
	}
}
