package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
)

// countingSource is a random source that counts the values drawn from it.
type countingSource struct {
	src rand.Source
	n   int
}

func (c *countingSource) Uint64() uint64 {
	c.n++
	return c.src.Uint64()
}

// RandomTransformedDataSHA256 returns a digest of the values of the
// block-level transformed data variables, and true, when transformed
// data drew random numbers (an _rng call) as the model was bound: its
// values, and so the posterior, then depend on the seed (Options.Seed),
// and models bound with other seeds are of other posteriors when their
// digests differ. It returns "" and false when transformed data drew
// nothing: its values follow from the model and the data alone.
func (m *Model) RandomTransformedDataSHA256() (string, bool) {
	if !m.randomTD {
		return "", false
	}
	h := sha256.New()
	var buf [8]byte
	word := func(x uint64) {
		binary.LittleEndian.PutUint64(buf[:], x)
		h.Write(buf[:])
	}
	for _, d := range blockDecls(m.IR.TransformedData) {
		word(uint64(len(d.Var.Name)))
		h.Write([]byte(d.Var.Name))
		v, err := m.slotValue(d)
		if err != nil {
			// Not a value slotValue reads (none in practice): its
			// absence is part of the digest.
			word(math.MaxUint64)
			continue
		}
		word(uint64(len(v.Dims)))
		for _, n := range v.Dims {
			word(uint64(n))
		}
		word(uint64(len(v.Data)))
		for _, x := range v.Data {
			if math.IsNaN(x) {
				x = math.NaN() // one NaN, whatever its payload
			}
			word(math.Float64bits(x))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// CRNSeed returns the seed the noise of the model's crn(...) calls is
// derived from, and true, when a crn call takes no seed argument: its
// replicates' streams then follow from the run's seed (Options.Seed), and
// models bound with other seeds average over other noise, so they are of
// other posteriors. It returns 0 and false when every crn call gives its
// seed, or there is none.
func (m *Model) CRNSeed() (uint64, bool) {
	for _, c := range m.IR.CRNs {
		if c.Seed == nil {
			return m.opts.Seed, true
		}
	}
	return 0, false
}
