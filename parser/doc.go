// Package parser reads .shm source text into lang syntax trees.
//
// The grammar is written for participle v2 (github.com/alecthomas/participle)
// as a tree of struct types, one per precedence level for expressions, and
// converted into lang nodes that carry 1-based line and column positions.
//
// Parse reports every syntax error it can find in one pass: after an error
// inside a block it blanks out the statement that contains it and parses
// again, so that independent mistakes in different statements are all
// reported. At most MaxErrors errors are reported, and the recovery stops
// once its reparsing has read 4 MiB (a file of megabytes reports its first
// errors). Input that would nest the parser more than 256 deep (brackets,
// runs of prefix operators, chains of ^) is refused before parsing.
//
// A byte order mark at the start of the text is skipped. Text that no
// token starts with is reported by what it is (a control character by its
// name and code, a byte that is not UTF-8 by its value, a misplaced byte
// order mark, an unterminated comment or string: badInput) and blanked; an
// unterminated comment reads to the end of the file, so the errors before
// it are those of the text cut before it (Prefix). An operator without its
// operand ("x + * 2") is reported where the operand is missing.
package parser
