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
package parser
