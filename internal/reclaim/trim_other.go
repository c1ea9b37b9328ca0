//go:build !(linux && cgo)

package reclaim

func trimC() {}
