//go:build race

package allocstest

const raceEnabled = true
