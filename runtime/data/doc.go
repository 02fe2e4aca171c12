// Package data reads the data files of an shm run: CSV files, CmdStan JSON
// files and --set name=value arguments. It knows nothing of models: it returns
// raw named values, each with its shape, its numbers in row-major order,
// whether every entry was written as an integer, and where every entry came
// from, so that the runtime can bind the values to the declared data
// variables and report any problem with the file, the column or key and the
// row.
//
// # Values
//
// A [Value] has a name, dimensions (none for a scalar, [N] for a vector or a
// one-dimensional array, [N, D] for a matrix or an array of vectors, and so on
// for deeper nesting) and its entries in row-major order (the last index
// varies fastest). [Value.Where] describes where entry k came from, for
// example
//
//	data.csv: column "x.2", row 14
//	data.json: key "y"[3][2]
//	--set y[2]
//
// # CSV files
//
// The first row that is not a comment names the columns. A column whose name
// has no index, such as y, gives a value of dims [N] where N is the length of
// the column. Columns named with indices, x.1 … x.D or x[1] … x[D], are
// grouped by their base name into one value of dims [N, D]; deeper indices
// (x.1.2 or x[1,2]) give [N, D1, D2]. The sizes are the largest indices, and
// every column of the grouped rectangle must be present. The two index
// notations may be mixed within a group. A header cell with a comma, such as
// x[1,2], must be in double quotes, as CSV requires. Indices are recognized
// only after an identifier (a letter or underscore, then letters, digits and
// underscores) and only when nothing but indices follows it; other names,
// such as R's mom.iq or "weight [kg]", are kept whole (the runtime will report
// them as unused).
//
// Rules:
//   - Rows are numbered by line in the file, the header's line being 1 when
//     the file has no comment lines above it: row 14 is line 14 in an editor
//     and row 14 in a spreadsheet. A record that spans several lines (a
//     quoted cell holding a newline) is numbered by its first line.
//   - Cells are decimal numbers (integers, decimals, exponents, an optional
//     sign: 3, -2.5, .5, 1e-3, +4E+2) or, in any letter case and with an
//     optional sign, nan, inf or infinity. Anything else is an error, as is a
//     number too large for a float64. Leading and trailing spaces are
//     trimmed. R's NA and other missing-value markers are errors: the
//     sampler has no missing values.
//   - Columns may have different lengths so that one file can hold vectors of
//     several sizes: the empty cells at the end of a column end it. An empty
//     cell followed by a value further down the same column is an error. The
//     columns of one group must all have the same length.
//   - A blank line below the header and above a row is an error naming it
//     (encoding/csv would drop it, moving the rows below up a row: a
//     missing value would go unnoticed); blank lines above the header, at
//     the end of the file or in a key-value table are ignored. Lines that
//     begin with # are comments, before or after the header.
//   - A file may give at most MaxValues numbers (a sixty-fourth of the
//     memory the process may use, as float64s), counted as they are read;
//     one more is an error naming its column and row. The files of one
//     command line (Load) together have the same bound, checked after
//     each file. A JSON file has the
//     same bound. Quoted cells and headers follow RFC 4180
//     (encoding/csv). A UTF-8 byte-order mark at the start is ignored.
//   - A header cell that is a number is an error (the file most likely lacks
//     a header row); so are duplicate column names, a column given both
//     plainly and with indices (x and x.1), a group whose columns have
//     different numbers of indices, an index 0, a name with unbalanced
//     brackets (an unquoted x[1,2] is split in two), and a value in a column
//     without a name or beyond the header's last column. Empty cells there are
//     ignored, so trailing commas are harmless.
//
// A CSV file whose header is exactly two columns, key (or name, or variable)
// and value, and whose first column holds names rather than numbers, is a
// table of scalars instead: each row gives the variable named in its first
// cell the number in its second, for example
//
//	key,value
//	N,120
//	lambda,1
//
// Such a file would be an error read as columns. Rows whose two cells are
// empty are skipped; a key given twice is an error.
//
// # JSON files
//
// The file is one JSON object in CmdStan's data format: each key names a
// value that is a number, a string "NaN", "Inf", "Infinity" (either with a
// sign, in any letter case: CmdStanPy writes "+inf"), or an array of those,
// nested up to 64 deep. Arrays must be rectangular; an empty array gives dims
// [0] and [[], []] gives [2, 0]. Python's json module writes NaN and
// Infinity as bare words; they are accepted too, as CmdStan accepts them. A
// number is an integer when it is written without a fraction or an exponent.
// Numbers are converted from their text with strconv.ParseFloat, so they keep
// full float64 precision. Errors give the key, the index path (1-based, as in
// the model: "y"[3][2] is y[3, 2]) and the line. true, false, null, other
// strings, objects, duplicate keys and anything after the closing brace are
// errors.
//
// # --set
//
// [ParseSet] reads name=value, where value is a number as in a CSV cell or a
// JSON array as in a JSON file.
//
// # Several sources
//
// A [Set] gathers the values of several files and --set arguments. A name
// given by two files is an error naming both; a --set value replaces a file's
// value and an earlier --set of the same name. [Set.Lookup] finds a value and
// records the name as used, and [Set.Unused] lists the values never looked
// up, so that the runtime can warn about them.
//
// # Integers
//
// [Value.IsInt] reports that every entry was written as an integer literal
// (an empty value counts as integer). It says nothing of range: an integer
// literal beyond ±2^53 has been rounded to the nearest float64, and the
// binder must check that int data fit the language's int type.
// [Value.WrittenAsReal] names the first entry written otherwise ("3.0",
// "1e3", "nan") and its text: CmdStan refuses such an entry for an int,
// and so does the binder.
package data
