//go:build !race

package allocstest

const raceEnabled = false
