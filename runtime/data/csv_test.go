package data

import (
	"math"
	"strings"
	"testing"
)

var (
	nan  = math.NaN()
	pInf = math.Inf(1)
	nInf = math.Inf(-1)
)

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []want
	}{{
		name:  "vector",
		input: "y\n1.5\n-2\n3e2\n",
		want:  []want{{"y", []int{3}, []float64{1.5, -2, 300}, false}},
	}, {
		name:  "integers",
		input: "n,m\n1,+4\n-2,0\n007,5\n",
		want: []want{
			{"n", []int{3}, []float64{1, -2, 7}, true},
			{"m", []int{3}, []float64{4, 0, 5}, true},
		},
	}, {
		name:  "number forms",
		input: "a\n.5\n5.\n1E3\n-2.5e-1\n+4e+2\n1.0\n",
		want:  []want{{"a", []int{6}, []float64{0.5, 5, 1000, -0.25, 400, 1}, false}},
	}, {
		name:  "full precision",
		input: "y\n1.3992377063260546\n0.1\n",
		want:  []want{{"y", []int{2}, []float64{1.3992377063260546, 0.1}, false}},
	}, {
		name:  "nan and inf",
		input: "z\nNaN\nnan\nInf\n-Inf\ninf\n+infinity\n-INFINITY\n",
		want:  []want{{"z", []int{7}, []float64{nan, nan, pInf, nInf, pInf, pInf, nInf}, false}},
	}, {
		name:  "matrix with dots",
		input: "x.1,x.2,x.3\n1,2,3\n4,5,6\n",
		want:  []want{{"x", []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}, true}},
	}, {
		name:  "matrix with brackets, columns out of order",
		input: "x[2],y,x[1]\n2,9,1\n4,8,3.5\n",
		want: []want{
			{"x", []int{2, 2}, []float64{1, 2, 3.5, 4}, false},
			{"y", []int{2}, []float64{9, 8}, true},
		},
	}, {
		name:  "mixed notation",
		input: "x.1,x[2]\n1,2\n",
		want:  []want{{"x", []int{1, 2}, []float64{1, 2}, true}},
	}, {
		name:  "three dimensions",
		input: "a.1.1,a.1.2,a.1.3,a.2.1,a.2.2,a.2.3\n1,2,3,4,5,6\n7,8,9,10,11,12\n",
		want:  []want{{"a", []int{2, 2, 3}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, true}},
	}, {
		name:  "three dimensions with brackets and spaces, shuffled",
		input: "\"a[2, 1]\",\"a[1,2]\",\"a[ 1 , 1 ]\",\"a[2,2]\"\n3,2,1,4\n",
		want:  []want{{"a", []int{1, 2, 2}, []float64{1, 2, 3, 4}, true}},
	}, {
		name:  "columns of different lengths",
		input: "y,sigma,w\n1,10,5\n2,20,\n3,,\n",
		want: []want{
			{"y", []int{3}, []float64{1, 2, 3}, true},
			{"sigma", []int{2}, []float64{10, 20}, true},
			{"w", []int{1}, []float64{5}, true},
		},
	}, {
		name:  "short records end columns",
		input: "y,z\n1,2\n3\n",
		want: []want{
			{"y", []int{2}, []float64{1, 3}, true},
			{"z", []int{1}, []float64{2}, true},
		},
	}, {
		name:  "header only",
		input: "y,x.1,x.2\n",
		want: []want{
			{"y", []int{0}, []float64{}, true},
			{"x", []int{0, 2}, []float64{}, true},
		},
	}, {
		name:  "blank lines, comments and spaces",
		input: "# made by hand\n\n y , x \n 1 ,\t2\n# a comment\n3,4\n\n\n",
		want: []want{
			{"y", []int{2}, []float64{1, 3}, true},
			{"x", []int{2}, []float64{2, 4}, true},
		},
	}, {
		name:  "quoted header and cells, CRLF, byte-order mark",
		input: "\uFEFF\"y\",\"x[1,2]\",\"x[1,1]\"\r\n\"1\",2,3\r\n",
		want: []want{
			{"y", []int{1}, []float64{1}, true},
			{"x", []int{1, 1, 2}, []float64{3, 2}, true},
		},
	}, {
		name:  "trailing commas",
		input: "y,\n1,\n2,,\n",
		want:  []want{{"y", []int{2}, []float64{1, 2}, true}},
	}, {
		name:  "names that are not indexed stay whole",
		input: "mom.iq,weight [kg],_x.1,x1,b.x\n1,2,3,4,5\n",
		want: []want{
			{"mom", []int{1, 1}, nil, false}, // replaced below
		},
	}, {
		name:  "a header that spells nan or inf is a name",
		input: "nan,Inf\n1,2\n",
		want: []want{
			{"nan", []int{1}, []float64{1}, true},
			{"Inf", []int{1}, []float64{2}, true},
		},
	}, {
		name:  "key-value table",
		input: "key,value\nN,120\nlambda,1\neps,2.16e-05\n,\n",
		want: []want{
			{"N", nil, []float64{120}, true},
			{"lambda", nil, []float64{1}, true},
			{"eps", nil, []float64{2.16e-05}, false},
		},
	}, {
		name:  "key-value table in other letter case, blank first row",
		input: "Name,Value\n,\nN,3\n",
		want:  []want{{"N", nil, []float64{3}, true}},
	}, {
		name:  "columns named key and value, no rows",
		input: "key,value\n",
		want: []want{
			{"key", []int{0}, []float64{}, true},
			{"value", []int{0}, []float64{}, true},
		},
	}, {
		name:  "columns named key and value holding numbers",
		input: "key,value\n1,2\n3,4\n",
		want: []want{
			{"key", []int{2}, []float64{1, 3}, true},
			{"value", []int{2}, []float64{2, 4}, true},
		},
	}}
	const namesCase = 16
	if !strings.HasPrefix(tests[namesCase].name, "names that are not indexed") {
		t.Fatal("namesCase points to the wrong test")
	}
	// "mom" is an identifier followed by ".iq", which is not an index, so
	// the name stays whole; "_x.1" is indexed.
	tests[namesCase].want = []want{
		{"mom.iq", []int{1}, []float64{1}, true},
		{"weight [kg]", []int{1}, []float64{2}, true},
		{"_x", []int{1, 1}, []float64{3}, true},
		{"x1", []int{1}, []float64{4}, true},
		{"b.x", []int{1}, []float64{5}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCSV("data.csv", strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			checkValues(t, got, tt.want)
		})
	}
}

func TestCSVWhere(t *testing.T) {
	input := "# comment line 1\n" +
		"y,x.1,x.2,z\n" + // line 2
		"1,2,3,4\n" + // line 3
		"# comment line 4\n" +
		"# comment line 5\n" +
		"5,6,7,\n" + // line 6
		"\"8\n\",9,10,\n" // lines 7-8: a quoted cell spanning two lines
	values, err := ReadCSV("dir/data.csv", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	y, x, z := values[0], values[1], values[2]
	tests := []struct {
		v    *Value
		k    int
		want string
	}{
		{y, 0, `dir/data.csv: column "y", row 3`},
		{y, 1, `dir/data.csv: column "y", row 6`},
		{y, 2, `dir/data.csv: column "y", row 7`},
		{x, 0, `dir/data.csv: column "x.1", row 3`},
		{x, 1, `dir/data.csv: column "x.2", row 3`},
		{x, 3, `dir/data.csv: column "x.2", row 6`},
		{x, 5, `dir/data.csv: column "x.2", row 7`},
		{z, 0, `dir/data.csv: column "z", row 3`},
		{z, 1, `dir/data.csv: entry 1 (out of range: the value has 1)`},
		{x, -1, `dir/data.csv: columns "x.1" … "x.2": entry -1 (out of range: the value has 6)`},
	}
	tests[8].want = `dir/data.csv: column "z": entry 1 (out of range: the value has 1)`
	for _, tt := range tests {
		if got := tt.v.Where(tt.k); got != tt.want {
			t.Errorf("%s.Where(%d) = %q, want %q", tt.v.Name, tt.k, got, tt.want)
		}
	}
	if got, want := x.Origin(), `dir/data.csv: columns "x.1" … "x.2"`; got != want {
		t.Errorf("Origin = %q, want %q", got, want)
	}
	if got, want := y.Origin(), `dir/data.csv: column "y"`; got != want {
		t.Errorf("Origin = %q, want %q", got, want)
	}
	if got, want := x.String(), `x[3,2] (dir/data.csv: columns "x.1" … "x.2")`; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := x.File(); got != "dir/data.csv" {
		t.Errorf("File = %q", got)
	}

	kv, err := ReadCSV("meta.csv", strings.NewReader("name,value\n\nN,3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kv[0].Where(0), `meta.csv: key "N", row 3`; got != want {
		t.Errorf("Where = %q, want %q", got, want)
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{{
		name:  "empty file",
		input: "",
		want:  `data.csv: no header row: the file has no data`,
	}, {
		name:  "only comments",
		input: "# nothing\n\n",
		want:  `data.csv: no header row: the file has no data`,
	}, {
		name:  "blank line inside a column",
		input: "y\n1\n2\n\n3\n",
		want:  `data.csv: row 4: blank line inside the data (only the end of the file may have blank lines; an empty cell must be written as such, as in "1,")`,
	}, {
		name:  "blank line below the header",
		input: "y,x\n\n1,2\n",
		want:  `data.csv: row 2: blank line inside the data (only the end of the file may have blank lines; an empty cell must be written as such, as in "1,")`,
	}, {
		name:  "blank line with CRLF, after a comment",
		input: "y\r\n1\r\n# note\r\n\r\n2\r\n",
		want:  `data.csv: row 4: blank line inside the data (only the end of the file may have blank lines; an empty cell must be written as such, as in "1,")`,
	}, {
		name:  "non-numeric cell",
		input: "y,x.1,x.2\n1,2,3\n4,5,abc\n",
		want:  `data.csv: column "x.2", row 3: "abc" is not a number`,
	}, {
		name:  "NA",
		input: "y\n1\nNA\n",
		want:  `data.csv: column "y", row 3: "NA" is not a number (missing values are not allowed)`,
	}, {
		name:  "hexadecimal",
		input: "y\n0x10\n",
		want:  `data.csv: column "y", row 2: "0x10" is not a number`,
	}, {
		name:  "underscore digits",
		input: "y\n1_000\n",
		want:  `data.csv: column "y", row 2: "1_000" is not a number`,
	}, {
		name:  "comma decimal",
		input: "y;z\n1,5;2\n",
		want:  `data.csv: row 2: value "5;2" in column 2, but the header has 1 columns`,
	}, {
		name:  "too large",
		input: "y\n1e999\n",
		want:  `data.csv: column "y", row 2: "1e999" is too large for a 64-bit float`,
	}, {
		name:  "long cell is shortened",
		input: "y\n" + strings.Repeat("a", 100) + "\n",
		want:  `data.csv: column "y", row 2: "` + strings.Repeat("a", 40) + `"… is not a number`,
	}, {
		name:  "empty cell before a value",
		input: "y,z\n1,2\n3,\n# note\n5,6\n",
		want:  `data.csv: column "z", row 3: empty cell above the value in row 5 (only the cells at the end of a column may be empty)`,
	}, {
		name:  "short record before a value",
		input: "y,z\n1\n3,4\n",
		want:  `data.csv: column "z", row 2: empty cell above the value in row 3 (only the cells at the end of a column may be empty)`,
	}, {
		name:  "missing column in a group",
		input: "x.1,x.3\n1,2\n",
		want:  `data.csv: column "x.2" is missing: the columns of x run from "x.1" to "x.3"`,
	}, {
		name:  "missing column in a bracket group",
		input: "\"x[1,1]\",\"x[2,2]\"\n1,2\n",
		want:  `data.csv: column "x[1,2]" is missing: the columns of x run from "x[1,1]" to "x[2,2]"`,
	}, {
		name:  "missing first column",
		input: "x.2\n1\n",
		want:  `data.csv: column "x.1" is missing: the columns of x run from "x.1" to "x.2"`,
	}, {
		name:  "huge index",
		input: "x.1,x.1000000000\n1,2\n",
		want:  `data.csv: column "x.2" is missing: the columns of x run from "x.1" to "x.1000000000"`,
	}, {
		name:  "index too large",
		input: "x.99999999999999999999\n1\n",
		want:  `data.csv: column "x.99999999999999999999": index 99999999999999999999 is too large`,
	}, {
		name:  "index 0",
		input: "x.0,x.1\n1,2\n",
		want:  `data.csv: column "x.0": index 0: indices start at 1`,
	}, {
		name:  "empty index",
		input: "x..1\n1\n",
		want:  `data.csv: column "x..1": empty index in the column name`,
	}, {
		name:  "bad bracket index",
		input: "x[1 2]\n1\n",
		want:  `data.csv: column "x[1 2]": bad index "1 2" in the column name`,
	}, {
		name:  "unquoted name with a comma",
		input: "y,x[1,2],x[1,1]\n1,2,3,4,5\n",
		want:  `data.csv: column "x[1": unbalanced brackets in the column name (a name with a comma, such as "x[1,2]", must be in double quotes)`,
	}, {
		name:  "group lengths differ",
		input: "x.1,x.2\n1,2\n3,\n",
		want:  `data.csv: column "x.2" has 1 value but column "x.1" has 2 (the columns of x must have equal lengths)`,
	}, {
		name:  "indices of different counts",
		input: "x.1,x.1.2\n1,2\n",
		want:  `data.csv: column "x.1.2" has 2 indices but column "x.1" has 1 index`,
	}, {
		name:  "duplicate column",
		input: "y,z,y\n1,2,3\n",
		want:  `data.csv: column "y" appears twice in the header (columns 1 and 3)`,
	}, {
		name:  "duplicate element column",
		input: "x.1,x.2,x.1\n1,2,3\n",
		want:  `data.csv: column "x.1" appears twice in the header (columns 1 and 3)`,
	}, {
		name:  "same element in two notations",
		input: "x.1,x[1]\n1,2\n",
		want:  `data.csv: columns "x.1" and "x[1]" are the same column of x`,
	}, {
		name:  "plain and indexed",
		input: "x,x.1\n1,2\n",
		want:  `data.csv: columns "x" and "x.1" both give x`,
	}, {
		name:  "indexed and plain",
		input: "x[1],x\n1,2\n",
		want:  `data.csv: columns "x[1]" and "x" both give x`,
	}, {
		name:  "no header",
		input: "1.5,2\n3,4\n",
		want:  `data.csv: row 1: header cell "1.5" is a number: the first row must name the columns`,
	}, {
		name:  "value beyond the header",
		input: "y,z\n1,2,3\n",
		want:  `data.csv: row 2: value "3" in column 3, but the header has 2 columns`,
	}, {
		name:  "value in a column without a name",
		input: "y,,z\n1,2,3\n",
		want:  `data.csv: row 2: value "2" in column 2, which has no name in the header`,
	}, {
		name:  "bad quotes",
		input: "y\n1\n2\"3\n",
		want:  `data.csv: row 3: bare " in non-quoted-field`,
	}, {
		name:  "unterminated quote",
		input: "y\n\"1\n",
		want:  `data.csv: row 2: extraneous or missing " in quoted-field`,
	}, {
		name:  "key-value table: duplicate key",
		input: "key,value\nN,1\nM,2\nN,3\n",
		want:  `data.csv: key "N" appears twice (rows 2 and 4)`,
	}, {
		name:  "key-value table: missing value",
		input: "key,value\nN,1\nM\n",
		want:  `data.csv: key "M", row 3: the value is missing`,
	}, {
		name:  "key-value table: value without name",
		input: "key,value\nN,1\n,2\n",
		want:  `data.csv: row 3: value "2" without a name`,
	}, {
		name:  "key-value table: bad value",
		input: "variable,value\nN,one\n",
		want:  `data.csv: key "N", row 2: "one" is not a number`,
	}, {
		name:  "key-value table: extra cell",
		input: "key,value\nN,1,2\n",
		want:  `data.csv: row 2: value "2" in column 3, but the header has 2 columns`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCSV("data.csv", strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("no error; got %d values", len(got))
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

// failingReader returns an error after some data.
type failingReader struct{ data string }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errDisk
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var errDisk = &diskError{}

type diskError struct{}

func (*diskError) Error() string { return "disk on fire" }

func TestReadErrorsFromReader(t *testing.T) {
	_, err := ReadCSV("data.csv", &failingReader{data: "y\n1\n"})
	if err == nil || err.Error() != "data.csv: disk on fire" {
		t.Errorf("ReadCSV error = %v", err)
	}
	_, err = ReadJSON("data.json", &failingReader{data: "{"})
	if err == nil || err.Error() != "data.json: disk on fire" {
		t.Errorf("ReadJSON error = %v", err)
	}
}

// TestCSVBlankLineInQuotedCell checks that a blank line inside a quoted
// cell spanning lines is not taken for a blank line between rows.
func TestCSVBlankLineInQuotedCell(t *testing.T) {
	tests := []struct {
		name, input string
		want        []string
	}{
		{"quoted header", "\"y\n\nz\",x\n1,2\n", []string{"y\n\nz", "x"}},
		{"key-value table", "name,value\nN,2\n\nM,3\n", []string{"N", "M"}},
		{"trailing blank lines", "y\n1\n\n\n", []string{"y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCSV("data.csv", strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d values, want %d", len(got), len(tt.want))
			}
			for i, v := range got {
				if v.Name != tt.want[i] {
					t.Errorf("value %d is %q, want %q", i, v.Name, tt.want[i])
				}
			}
		})
	}
}

// TestReadValuesBound checks that the number of values a file gives is
// counted while reading and refused, naming the file, column and row,
// past the bound.
func TestReadValuesBound(t *testing.T) {
	tests := []struct {
		name, input string
		json        bool
		want        string
	}{
		{"one column", "y\n1\n2\n3\n4\n", false, `data.csv: column "y", row 5: more than 3 values in the file`},
		{"two columns", "y,x\n1,2\n3,4\n", false, `data.csv: column "x", row 3: more than 3 values in the file`},
		{"json", `{"N": 1, "y": [1, 2, 3]}`, true, `data.json: key "y"[3], line 1: more than 3 numbers in the file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.json {
				p := &jsonParser{b: tt.input, file: "data.json", maxValues: 3}
				_, err = p.parseFile()
			} else {
				_, err = readCSV("data.csv", strings.NewReader(tt.input), 3)
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v\nwant it to start with %q", err, tt.want)
			}
		})
	}
	if _, err := readCSV("data.csv", strings.NewReader("y\n1\n2\n3\n"), 3); err != nil {
		t.Errorf("3 values with a bound of 3: %v", err)
	}
}

// TestWrittenAsReal checks that the readers note the first entry not
// written as an integer literal, with its text.
func TestWrittenAsReal(t *testing.T) {
	tests := []struct {
		name, file, input string
		k                 int
		text              string
		ok                bool
	}{
		{"csv ints", "d.csv", "k\n1\n2\n", 0, "", false},
		{"csv fraction", "d.csv", "k\n1\n3.0\n1e3\n", 1, "3.0", true},
		{"csv columns, row-major", "d.csv", "k.1,k.2\n1,2\n3.5,4e0\n", 2, "3.5", true},
		{"csv columns, later column first row", "d.csv", "k.1,k.2\n1,2.0\n3.5,4\n", 1, "2.0", true},
		{"key-value", "d.csv", "name,value\nN,2.0\n", 0, "2.0", true},
		{"json", "d.json", `{"k": [[1, 2], [3, 1e3]]}`, 3, "1e3", true},
		{"json nan string", "d.json", `{"k": [1, "NaN"]}`, 1, `"NaN"`, true},
		{"json ints", "d.json", `{"k": [1, -2]}`, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals []*Value
			var err error
			if strings.HasSuffix(tt.file, ".json") {
				vals, err = ReadJSON(tt.file, strings.NewReader(tt.input))
			} else {
				vals, err = ReadCSV(tt.file, strings.NewReader(tt.input))
			}
			if err != nil {
				t.Fatal(err)
			}
			k, text, ok := vals[0].WrittenAsReal()
			if k != tt.k || text != tt.text || ok != tt.ok {
				t.Errorf("WrittenAsReal() = %d, %q, %v; want %d, %q, %v", k, text, ok, tt.k, tt.text, tt.ok)
			}
		})
	}
	for _, arg := range []string{"k=2.0", "k=[1, 2.0]"} {
		v, err := ParseSet(arg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := v.WrittenAsReal(); !ok {
			t.Errorf("--set %s: not noted as written as a real", arg)
		}
	}
}

// TestKeyValueOrColumns checks a file whose header could be a key-value
// table's: it is one when its first key is not a number, decided at that
// row, with the blank-line rule and the bound on values of each kind.
func TestKeyValueOrColumns(t *testing.T) {
	tests := []struct {
		name, input string
		max         int64
		want        string // names of the values, or the error
	}{
		{"key-value", "name,value\nN,2\n\nlambda,0.5\n", 0, "N lambda"},
		{"columns", "name,value\n1,2\n3,4\n", 0, "name value"},
		{"columns after an empty first cell", "name,value\n,2\n3,4\n", 0, `data.csv: column "name", row 2: empty cell above the value in row 3 (only the cells at the end of a column may be empty)`},
		{"blank line in columns", "name,value\n1,2\n\n3,4\n", 0, `data.csv: row 3: blank line inside the data (only the end of the file may have blank lines; an empty cell must be written as such, as in "1,")`},
		{"blank line before the first key of columns", "name,value\n\n1,2\n", 0, `data.csv: row 2: blank line inside the data (only the end of the file may have blank lines; an empty cell must be written as such, as in "1,")`},
		{"rows of a key-value table bounded", "name,value\nA,1\nB,2\nC,3\n", 2, `data.csv: row 4: more than 2 rows in the file`},
		{"columns bounded", "name,value\n1,2\n3,4\n", 3, `data.csv: column "value", row 3: more than 3 values in the file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, err := readCSV("data.csv", strings.NewReader(tt.input), tt.max)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				var names []string
				for _, v := range vals {
					names = append(names, v.Name)
				}
				got = strings.Join(names, " ")
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
