package autodiff

// scratchChunk is the smallest block the scratch arena allocates.
const scratchChunk = 4096

// scratchArena hands out float64 slices from blocks that never move, so
// that a slice stays valid until Reset however much is allocated after it.
type scratchArena struct {
	blocks [][]float64
	cur    int // index of the block being filled
	used   int // elements used in blocks[cur]
}

func (s *scratchArena) reset() { s.cur, s.used = 0, 0 }

func (s *scratchArena) get(n int) []float64 {
	for s.cur < len(s.blocks) {
		b := s.blocks[s.cur]
		if s.used+n <= len(b) {
			x := b[s.used : s.used+n : s.used+n]
			s.used += n
			clear(x)
			return x
		}
		s.cur++
		s.used = 0
	}
	b := make([]float64, max(n, scratchChunk))
	s.blocks = append(s.blocks, b)
	s.cur = len(s.blocks) - 1
	s.used = n
	return b[:n:n]
}

// Scratch returns n zeroed float64s of working memory for the current
// evaluation, for primitives that need temporaries (a density's
// intermediate terms, a custom node's saved state). The slice is not part
// of the tape and has no adjoint; it stays valid, unlike Val, however much
// is recorded after it, until the next Reset, which recycles it. Once the
// tape has seen an evaluation, the same sequence of requests allocates
// nothing.
func (t *Tape) Scratch(n int) []float64 {
	if n < 0 {
		t.fail("Scratch: negative length %d", n)
		return nil
	}
	return t.scratch.get(n)
}
