// Command xsect intersects sets fast, on CPUs and GPUs.
//
// Run "xsect --help" for its commands and "xsect COMMAND --help" for each
// command's flags.
package main

import (
	"os"

	"github.com/xsect/xsect/cmd/xsect/internal/cli"
	"github.com/xsect/xsect/internal/gpurt"
)

func main() {
	gpurt.TeardownHelper()
	code := cli.Main(os.Args[1:], &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	// The GPUs' teardown after the exit rather than before it; on an error
	// the exit pays it, as it would have.
	_ = gpurt.HandOffTeardown()
	os.Exit(code)
}
