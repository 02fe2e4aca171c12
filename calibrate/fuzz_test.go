package calibrate

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
)

// FuzzDraws: a draws file of any content is read without a panic, and one
// that reads back writes back the same bytes.
func FuzzDraws(f *testing.F) {
	dir := Dir(f.TempDir())
	task := Task{Lambda: 1, Dataset: 0}
	digest := strings.Repeat("5a", 32)
	for _, dr := range []*Draws{
		{Theta: [][]float64{{1, 2}}, Params: [][]float64{{3}}, LP: []float64{-1}, Seed: 3, DatasetSHA256: digest},
		{Theta: [][]float64{{1}, {2}}, Params: [][]float64{{3, 4}, {5, 6}}, LP: []float64{-1, -2},
			Prior: []float64{1, 2}, Loss: []float64{3, 4}, TruthPrior: 5, TruthLoss: 6, Seed: 4, DatasetSHA256: digest},
	} {
		if err := dir.WriteDraws(task, dr); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(dir.DrawsPath(task))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	wrap := []byte(drawsMagic)
	for _, x := range []uint32{drawsVersion, 1 << 31, 1<<32 - 1, 1<<32 - 2, 1, 7} {
		wrap = binary.LittleEndian.AppendUint32(wrap, x)
	}
	wrap = binary.LittleEndian.AppendUint64(wrap, math.Float64bits(2))
	wrap = append(wrap, make([]byte, 8+32)...)
	f.Add(append(wrap, make([]byte, 16)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		dr, err := decodeDraws(b)
		if err != nil {
			return
		}
		d := Dir(t.TempDir())
		if err := d.WriteDraws(dr.Task, dr); err != nil {
			t.Fatalf("read back, not written: %v", err)
		}
		again, err := os.ReadFile(d.DrawsPath(dr.Task))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("written back as %x, read from %x", again, b)
		}
	})
}
