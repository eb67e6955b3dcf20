module github.com/xsect/xsect/benchmarks

go 1.26.0

replace github.com/xsect/xsect => ../

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/xsect/xsect v0.0.0-00010101000000-000000000000
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
