package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/xsect/xsect/query"
	"github.com/xsect/xsect/setio"
)

// readQueryLines calls fn with each line of the query file at path,
// without its newline, however long, with the file's name and the line's
// number: the one reader of xsect query and xsect loadgen.
func readQueryLines(env *Env, path string, fn func(name string, lineNo int, line []byte) error) error {
	in, err := openInput(env, path)
	if err != nil {
		return err
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 1<<16)
	var long []byte
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it.
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if ferr := fn(in.name, lineNo, bytes.TrimSuffix(line, []byte{'\n'})); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

// parseQueryIDs appends the term ids of a line to q's terms; a bad line
// is an error naming the file, line and column.
func parseQueryIDs(q query.Query, line []byte, name string, lineNo int) (query.Query, error) {
	q, err := query.ParseIDs(q, line)
	if err != nil {
		var se *query.SyntaxError
		if errors.As(err, &se) {
			return q, &setio.ParseError{File: name, Line: lineNo, Col: se.Col, Msg: se.Msg}
		}
	}
	return q, err
}
