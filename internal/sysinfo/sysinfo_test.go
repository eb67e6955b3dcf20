package sysinfo

import "testing"

func TestSysinfo(t *testing.T) {
	if CPUName() == "" {
		t.Error("CPUName is empty")
	}
	if m := Memory(); m < 64<<20 {
		t.Errorf("Memory = %d bytes, implausibly small", m)
	}
}
