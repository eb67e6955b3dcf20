// Command xsect intersects sets fast, on CPUs and GPUs.
//
// Run "xsect --help" for its commands and "xsect COMMAND --help" for each
// command's flags.
package main

import (
	"os"

	"github.com/xsect/xsect/cmd/xsect/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
