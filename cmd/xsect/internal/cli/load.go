package cli

import (
	"bufio"
	"fmt"
	"os"

	"github.com/xsect/xsect/internal/progress"
	"github.com/xsect/xsect/setio"
	"github.com/xsect/xsect/sets"
)

// loadCollection reads a collection file of either format, showing progress
// on a terminal for large files. It also returns the format it found.
func loadCollection(path string) (*sets.Collection, setio.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	bar := progress.Start("reading "+path, "B", size)
	defer bar.Done()
	br := bufio.NewReaderSize(bar.Reader(f), 1<<20)
	format, err := setio.Detect(br)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if format == setio.Binary {
		// Load sizes the arrays from the header and the file size at once;
		// binary files load too fast to need progress.
		bar.Done()
		c, err := setio.Load(path)
		return c, format, err
	}
	c, err := setio.ReadTextSize(br, path, size)
	return c, format, err
}
