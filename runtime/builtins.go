package runtime

import (
	"github.com/shmlang/shm/stdlib"
	"github.com/shmlang/shm/stdlib/dist"
	"github.com/shmlang/shm/stdlib/image"
	mathlib "github.com/shmlang/shm/stdlib/math"
	"github.com/shmlang/shm/stdlib/sinkhorn"
)

// Builtins returns a new table with the implementation of every built-in
// of the standard library.
func Builtins() stdlib.Impls {
	m := stdlib.Impls{}
	mathlib.Register(m)
	dist.Register(m)
	sinkhorn.Register(m)
	image.Register(m)
	return m
}
