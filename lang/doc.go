// Package lang defines the abstract syntax tree of the shm modeling
// language, its type system and the positioned error type shared by the
// parser, the checker and the runtime.
//
// Every node carries the position of its first character. Positions are
// 1-based lines and 1-based columns counted in characters (runes), so that
// an error renders as
//
//	model.shm:12:7: unknown function "nromal"; did you mean "normal"?
//	  mu ~ nromal(0, 1);
//	       ^
//
// The package imports nothing of shm's own.
package lang
