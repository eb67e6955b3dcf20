package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// searchRequest is the body of POST /v1/search and one element of a batch.
type searchRequest struct {
	Terms termList `json:"terms"`
	Q     *string  `json:"q"`
	Limit *int     `json:"limit"`
}

// batchRequest is the body of POST /v1/search:batch. Its queries are kept
// raw and decoded one by one, so that an error names the query it is in.
type batchRequest struct {
	Queries []json.RawMessage `json:"queries"`
}

// termList is a JSON array of term ids, each an integer in [0, 2^32-1]
// written without a sign, fraction or exponent. It is parsed by hand: the
// error names the offending element, and no float is ever involved.
// A null leaves it nil (absent).
type termList []uint32

// UnmarshalJSON implements json.Unmarshaler. The decoder has already
// checked that b is one well-formed JSON value.
func (t *termList) UnmarshalJSON(b []byte) error {
	b = trimSpace(b)
	if string(b) == "null" {
		*t = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' {
		return fieldError{"terms", "want an array of term ids, got " + kindOf(b)}
	}
	list := (*t)[:0]
	if list == nil {
		list = make([]uint32, 0, 8)
	}
	rest := trimSpace(b[1 : len(b)-1])
	for i := 0; len(rest) > 0; i++ {
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		lit := rest[:end]
		after := trimSpace(rest[end:])
		if end == 0 || (len(after) > 0 && after[0] != ',') {
			return fieldError{fmt.Sprintf("terms[%d]", i), "want an integer in [0, 4294967295], got " + describeElement(rest)}
		}
		v, err := strconv.ParseUint(string(lit), 10, 32)
		if err != nil {
			return fieldError{fmt.Sprintf("terms[%d]", i), "want an integer in [0, 4294967295], got " + shorten(string(lit))}
		}
		list = append(list, uint32(v))
		if len(after) > 0 {
			after = trimSpace(after[1:]) // the comma
		}
		rest = after
	}
	*t = list
	return nil
}

// describeElement describes, for a message, the array element that rest
// starts with (a well-formed JSON value, then more of the array). An array
// or an object is named by its kind: cut at its first comma, it would show
// a fragment such as "[1" that the client never wrote. A string is shown
// whole, even when it holds a comma; a number or a literal as written.
func describeElement(rest []byte) string {
	switch rest[0] {
	case '[', '{':
		return kindOf(rest)
	case '"':
		for j := 1; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				j++ // the escaped byte
			case '"':
				return shorten(string(rest[:j+1]))
			}
		}
	}
	elem := rest
	if j := bytes.IndexAny(rest, ",]}"); j > 0 {
		elem = rest[:j]
	}
	return shorten(string(trimSpace(elem)))
}

// fieldError is a bad value of a named field.
type fieldError struct{ field, msg string }

func (e fieldError) Error() string { return e.field + ": " + e.msg }

func trimSpace(b []byte) []byte {
	return bytes.TrimFunc(b, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// kindOf names the kind of the JSON value b, for messages.
func kindOf(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the number " + shorten(string(b))
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// fieldWants says what each field holds, for type errors.
var fieldWants = map[string]string{
	"terms":   "an array of term ids",
	"q":       "a string",
	"limit":   "an integer",
	"queries": "an array of queries",
}

// decodeStrict decodes the single JSON value in body into v, rejecting
// unknown fields and anything after the value, and turns the decoder's
// errors into messages that name the field.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the top-level value")
	}
	return nil
}

// jsonError rewrites an encoding/json error for a client.
func jsonError(err error) error {
	var fe fieldError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, io.EOF):
		return errors.New("malformed JSON: empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of the body")
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		field := te.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		want, ok := fieldWants[field]
		if field == "" {
			field, want, ok = "body", "a JSON object", true
		}
		if !ok {
			want = te.Type.String()
		}
		return fieldError{field, "want " + want + ", got " + te.Value}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		return errors.New(msg + " (the fields are terms, q, limit; queries in a batch)")
	}
	return errors.New(msg)
}

// encodeResult appends {"count":C,"ids":[...]} to buf.
func encodeResult(buf []byte, r Result) []byte {
	buf = append(buf, `{"count":`...)
	buf = strconv.AppendInt(buf, int64(r.Count), 10)
	buf = append(buf, `,"ids":[`...)
	for i, id := range r.IDs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, uint64(id), 10)
	}
	return append(buf, "]}"...)
}

// encodeError appends {"error":"msg"} to buf.
func encodeError(buf []byte, msg string) []byte {
	q, _ := json.Marshal(msg) // a string always marshals
	buf = append(buf, `{"error":`...)
	buf = append(buf, q...)
	return append(buf, '}')
}
