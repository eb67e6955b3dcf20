package sysinfo

import "os"

func readCaches() (Caches, bool) {
	return sysfsCaches(os.DirFS("/sys/devices/system/cpu/cpu0/cache"))
}
