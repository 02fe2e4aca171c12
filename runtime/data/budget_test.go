package data

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/stdlib"
)

// TestValueBudget: a data file's values are counted while they are read
// (a word per number, a header per nested JSON array or per row of an
// indexed CSV variable, which may become a vector of an array) and a
// file beyond the bound is refused naming the file and the variable or
// row, before its values are held.
func TestValueBudget(t *testing.T) {
	h := int64(stdlib.ElementWords)
	pairs := func(n int) string { // {"x": [[0,0], ...]}
		return `{"x": [` + strings.TrimSuffix(strings.Repeat("[0,0],", n), ",") + `]}`
	}
	flat := func(n int) string { // {"y": [0, ...]}
		return `{"y": [` + strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}`
	}
	column := func(head string, n int, row string) string {
		return head + "\n" + strings.Repeat(row+"\n", n)
	}
	for _, tc := range []struct {
		name, file, text string
		limit            int64
		want             string // "" for a file read
	}{
		{"pairs within", "d.json", pairs(100), 100 * (2 + h), ""},
		{"pairs beyond: headers count", "d.json", pairs(100), 100*(2+h) - 1, `data file d.json: key "x", line 1: the values read so far need`},
		{"flat numbers within", "d.json", flat(1000), 1000, ""},
		{"flat numbers beyond", "d.json", flat(1000), 999, `data file d.json: key "y", line 1:`},
		{"no bound", "d.json", pairs(1000), 0, ""},
		{"csv column within", "d.csv", column("y", 100, "0"), 100 * 2, ""},
		{"csv column beyond", "d.csv", column("y", 100, "0"), 100*2 - 1, "data file d.csv: row 101: the values read so far need"},
		{"csv indexed beyond: headers count", "d.csv", column("x.1,x.2", 100, "0,0"), 100 * 3, "data file d.csv: row"},
		{"csv indexed within", "d.csv", column("x.1,x.2", 100, "0,0"), 100 * (3 + h), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if strings.HasSuffix(tc.file, ".json") {
				_, err = readJSON(tc.file, strings.NewReader(tc.text), tc.limit)
			} else {
				_, err = readCSV(tc.file, strings.NewReader(tc.text), tc.limit)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
