package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadFile reads a data file by path: CmdStan JSON when the name ends in
// .json (in any letter case), CSV otherwise. The path, as given, names the
// file in error messages and provenance.
func ReadFile(path string) ([]*Value, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data file: %w", err)
	}
	defer f.Close()
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return ReadJSON(path, f)
	}
	return ReadCSV(path, f)
}
