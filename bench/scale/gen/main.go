// Command gen writes the data of bench/scale/scale.shm: n points y ~ N(0, I)
// and x ~ N(0.1, 1.1² I) in d dimensions, as a CSV file with columns x.1 …
// x.d, y.1 … y.d, from a fixed seed.
//
//	go run ./bench/scale/gen -n 100000 -d 2 > data.csv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	n := flag.Int("n", 100000, "number of points of each measure")
	d := flag.Int("d", 1, "dimension")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *n < 2 || *d < 1 {
		fmt.Fprintln(os.Stderr, "gen: need n ≥ 2 and d ≥ 1")
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(*seed, uint64(*d)))
	w := bufio.NewWriter(os.Stdout)
	for _, v := range []string{"x", "y"} {
		for k := 1; k <= *d; k++ {
			if v != "x" || k > 1 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, "%s.%d", v, k)
		}
	}
	w.WriteByte('\n')
	row := make([]float64, 2**d)
	for range *n {
		for k := range *d {
			row[k] = 0.1 + 1.1*rng.NormFloat64()
			row[*d+k] = rng.NormFloat64()
		}
		for k, v := range row {
			if k > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(v, 'g', 17, 64))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
