package engine

import (
	"fmt"
	"strings"
	"sync"
)

// Notes collects what an engine says about one run (where its time went,
// on which device, in how many pieces), for the caller to show: a run's
// account belongs to its plan, not to a process-wide variable. Its methods
// are safe for concurrent use; the zero value is empty.
type Notes struct {
	mu    sync.Mutex
	lines []string
}

// Add records one line.
func (n *Notes) Add(format string, args ...any) {
	n.mu.Lock()
	n.lines = append(n.lines, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

// String returns the lines recorded, one per line, in their order.
func (n *Notes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.lines) == 0 {
		return ""
	}
	return strings.Join(n.lines, "\n") + "\n"
}
