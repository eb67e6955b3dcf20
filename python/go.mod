module github.com/xsect/xsect/python

go 1.26.0

replace github.com/xsect/xsect => ../

require github.com/xsect/xsect v0.0.0-00010101000000-000000000000

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
