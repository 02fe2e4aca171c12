package data

import (
	"strings"
	"testing"
)

func TestReadJSON(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []want
	}{{
		name:  "eight schools",
		input: `{"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18.5]}`,
		want: []want{
			{"J", nil, []float64{8}, true},
			{"y", []int{8}, []float64{28, 8, -3, 7, -1, 1, 18, 12}, true},
			{"sigma", []int{8}, []float64{15, 10, 16, 11, 9, 11, 10, 18.5}, false},
		},
	}, {
		name:  "empty object",
		input: " {\n} \n",
		want:  []want{},
	}, {
		name:  "reals and exponents",
		input: `{"a": 1.0, "b": 1e3, "c": -0.5E-2, "d": 0, "e": -0}`,
		want: []want{
			{"a", nil, []float64{1}, false},
			{"b", nil, []float64{1000}, false},
			{"c", nil, []float64{-0.005}, false},
			{"d", nil, []float64{0}, true},
			{"e", nil, []float64{0}, true},
		},
	}, {
		name:  "full precision",
		input: `{"x": [0.1, 1.3992377063260546, 2.2250738585072014e-308, 4.9e-324, 1e-400]}`,
		want:  []want{{"x", []int{5}, []float64{0.1, 1.3992377063260546, 2.2250738585072014e-308, 5e-324, 0}, false}},
	}, {
		name:  "matrix",
		input: `{"X": [[1, 2, 3], [4, 5, 6]]}`,
		want:  []want{{"X", []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}, true}},
	}, {
		name:  "three dimensions",
		input: `{"a": [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]}`,
		want:  []want{{"a", []int{2, 3, 2}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, true}},
	}, {
		name:  "empty arrays",
		input: `{"a": [], "b": [[], []], "c": [[[]]]}`,
		want: []want{
			{"a", []int{0}, []float64{}, true},
			{"b", []int{2, 0}, []float64{}, true},
			{"c", []int{1, 1, 0}, []float64{}, true},
		},
	}, {
		name:  "special strings",
		input: `{"s": ["NaN", "Inf", "+Inf", "-Inf", "Infinity", "-Infinity", "+inf", "-inf", "nan", 1]}`,
		want:  []want{{"s", []int{10}, []float64{nan, pInf, pInf, nInf, pInf, nInf, pInf, nInf, nan, 1}, false}},
	}, {
		name:  "bare words as Python writes them",
		input: `{"s": [NaN, Infinity, -Infinity, 2], "t": NaN}`,
		want: []want{
			{"s", []int{4}, []float64{nan, pInf, nInf, 2}, false},
			{"t", nil, []float64{nan}, false},
		},
	}, {
		name:  "escaped key and byte-order mark",
		input: "\uFEFF{\"a\\u0062\": 1, \"\": 2}",
		want: []want{
			{"ab", nil, []float64{1}, true},
			{"", nil, []float64{2}, true},
		},
	}, {
		name:  "whitespace everywhere",
		input: "\n\t{ \"y\" :\r\n [ 1 ,\n 2 ] \n}\n\n",
		want:  []want{{"y", []int{2}, []float64{1, 2}, true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSON("data.json", strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			checkValues(t, got, tt.want)
		})
	}
}

func TestJSONWhere(t *testing.T) {
	values, err := ReadJSON("in/data.json", strings.NewReader(`{"X": [[1, 2, 3], [4, 5, 6]], "s": 3, "y": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	x, s, y := values[0], values[1], values[2]
	tests := []struct {
		v    *Value
		k    int
		want string
	}{
		{x, 0, `in/data.json: key "X"[1][1]`},
		{x, 2, `in/data.json: key "X"[1][3]`},
		{x, 4, `in/data.json: key "X"[2][2]`},
		{s, 0, `in/data.json: key "s"`},
		{y, 0, `in/data.json: key "y"[1]`},
		{y, 1, `in/data.json: key "y": entry 1 (out of range: the value has 1)`},
	}
	for _, tt := range tests {
		if got := tt.v.Where(tt.k); got != tt.want {
			t.Errorf("%s.Where(%d) = %q, want %q", tt.v.Name, tt.k, got, tt.want)
		}
	}
	if got, want := x.Origin(), `in/data.json: key "X"`; got != want {
		t.Errorf("Origin = %q, want %q", got, want)
	}
	if got, want := x.Index(4), []int{1, 1}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Index(4) = %v, want %v", got, want)
	}
	if got := s.Index(0); got != nil {
		t.Errorf("scalar Index(0) = %v, want nil", got)
	}
}

func TestReadJSONErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{{
		name:  "empty file",
		input: " \n",
		want:  `data.json: the file is empty: expected a JSON object { "name": value, ... }`,
	}, {
		name:  "not an object",
		input: "\n[1, 2]",
		want:  `data.json: line 2: expected a JSON object { "name": value, ... }, found '['`,
	}, {
		name:  "ragged array",
		input: "{\"x\": [[1, 2],\n [3]]}",
		want:  `data.json: key "x"[2], line 2: ragged array: it has 1 element but "x"[1] has 2`,
	}, {
		name:  "ragged deeper",
		input: `{"x": [[], [[1], [1, 2]]]}`,
		want:  `data.json: key "x"[2][2], line 1: ragged array: it has 2 elements but "x"[2][1] has 1`,
	}, {
		name:  "ragged with an empty array",
		input: `{"x": [[1], []]}`,
		want:  `data.json: key "x"[2], line 1: ragged array: it has 0 elements but "x"[1] has 1`,
	}, {
		name:  "number where an array was expected",
		input: `{"x": [[1, 2], 3]}`,
		want:  `data.json: key "x"[2], line 1: a number where an array was expected ("x"[1] is an array)`,
	}, {
		name:  "array where a number was expected",
		input: `{"x": [1, [2]]}`,
		want:  `data.json: key "x"[2], line 1: an array where a number was expected ("x"[1] is a number)`,
	}, {
		name:  "string",
		input: `{"y": [1, "two"]}`,
		want:  `data.json: key "y"[2], line 1: the string "two" is not a number (the strings allowed are "NaN", "Inf", "-Inf", "Infinity" and "-Infinity")`,
	}, {
		name:  "true",
		input: `{"y": [1, 2, true]}`,
		want:  `data.json: key "y"[3], line 1: true is not a number`,
	}, {
		name:  "null",
		input: `{"y": null}`,
		want:  `data.json: key "y", line 1: null is not a number`,
	}, {
		name:  "object",
		input: "{\"y\": 1,\n \"t\": {\"1\": 2}}",
		want:  `data.json: key "t", line 2: an object is not a number or an array of numbers`,
	}, {
		name:  "leading zero",
		input: `{"y": [01]}`,
		want:  `data.json: key "y"[1], line 1: 01 is not a number`,
	}, {
		name:  "leading plus",
		input: `{"y": +1}`,
		want:  `data.json: key "y", line 1: +1 is not a number`,
	}, {
		name:  "bare dot",
		input: `{"y": .5}`,
		want:  `data.json: key "y", line 1: .5 is not a number`,
	}, {
		name:  "long bad token",
		input: `{"y": 12345678901234567890123456789012345678901234567890abc}`,
		want:  `data.json: key "y", line 1: 1234567890123456789012345678901234567890… is not a number`,
	}, {
		name:  "too large",
		input: `{"y": [1, 2e400]}`,
		want:  `data.json: key "y"[2], line 1: 2e400 is too large for a 64-bit float`,
	}, {
		name:  "duplicate key",
		input: "{\"y\": 1,\n\"z\": 2,\n\"y\": 3}",
		want:  `data.json: line 3: key "y" appears twice (first on line 1)`,
	}, {
		name:  "trailing comma in object",
		input: `{"y": 1,}`,
		want:  `data.json: line 1: expected a key in double quotes, found '}'`,
	}, {
		name:  "trailing comma in array",
		input: `{"y": [1,]}`,
		want:  `data.json: key "y"[2], line 1: expected a value, found ']'`,
	}, {
		name:  "missing comma in array",
		input: `{"y": [1 2]}`,
		want:  `data.json: key "y", line 1: expected ',' or ']' in the array, found '2'`,
	}, {
		name:  "missing colon",
		input: `{"y" 1}`,
		want:  `data.json: line 1: expected ':' after key "y", found '1'`,
	}, {
		name:  "unquoted key",
		input: `{y: 1}`,
		want:  `data.json: line 1: expected a key in double quotes, found 'y'`,
	}, {
		name:  "missing comma in object",
		input: `{"y": 1 "z": 2}`,
		want:  `data.json: line 1: expected ',' or '}' after the value of key "y", found '"'`,
	}, {
		name:  "unterminated object",
		input: `{"y": 1`,
		want:  `data.json: line 1: expected ',' or '}' after the value of key "y", found the end of the text`,
	}, {
		name:  "unterminated array",
		input: "{\"y\": [1,\n",
		want:  `data.json: key "y"[2], line 2: unexpected end of the text: expected a value`,
	}, {
		name:  "unterminated string",
		input: `{"y`,
		want:  `data.json: line 1: string without its closing quote`,
	}, {
		name:  "control character in a key",
		input: "{\"a\tb\": 1}",
		want:  `data.json: line 1: control character '\t' in a string`,
	}, {
		name:  "bad escape",
		input: `{"a\qb": 1}`,
		want:  `data.json: line 1: bad string: invalid character 'q' in string escape code`,
	}, {
		name:  "data after the object",
		input: "{\"y\": 1}\n{}",
		want:  `data.json: line 2: unexpected '{' after the closing '}'`,
	}, {
		name:  "too deep",
		input: `{"y": ` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`,
		want:  `data.json: key "y"` + strings.Repeat("[1]", 64) + `, line 1: arrays nested deeper than 64 levels`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSON("data.json", strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("no error; got %d values", len(got))
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}
