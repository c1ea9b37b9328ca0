// Command mkhostile writes every hostile case of package hostile into a
// folder, with manifest.json listing each file and what must come of it:
//
//	go run ./internal/hostile/mkhostile DIR
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-dev/sluice/internal/hostile"
)

type entry struct {
	Name       string   `json:"name"`
	Format     string   `json:"format"`
	Row        string   `json:"row"`
	File       string   `json:"file"`
	Bytes      int      `json:"bytes"`
	Refused    []string `json:"refused"`
	PerRequest int      `json:"per_request"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mkhostile DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "mkhostile:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var list []entry
	for _, c := range hostile.Cases() {
		b := c.Make()
		file := c.Name + ".bin"
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			return err
		}
		list = append(list, entry{Name: c.Name, Format: c.Format, Row: c.Row, File: file, Bytes: len(b),
			Refused: c.Refused, PerRequest: max(c.PerRequest, 1)})
	}
	j, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), j, 0o644)
}
