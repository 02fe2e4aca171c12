package runtime

import "testing"

// TestSeedDependence: a model records what of its posterior depends on
// the seed it was bound with: transformed data that drew random numbers
// (a digest of its values, the same for the same seed), and crn calls
// without a seed argument (the seed). Transformed data without draws,
// and crn calls that give their seed, depend on no seed.
func TestSeedDependence(t *testing.T) {
	for _, c := range []struct {
		name, src   string
		randomTD    bool
		crnFromSeed bool
	}{
		{"rng", "transformed data { real c = normal_rng(0, 10); vector[2] v = [c, 1]'; }\nparameters { real mu; }\nmodel { mu ~ normal(c, 1); }", true, false},
		{"rng in a loop", "transformed data { array[3] int k; for (i in 1:3) k[i] = poisson_rng(20); }\nparameters { real mu; }\nmodel { mu ~ normal(k[1], 1); }", true, false},
		{"no rng", "transformed data { real c = 2 * 1.5; }\nparameters { real mu; }\nmodel { mu ~ normal(c, 1); }", false, false},
		{"rng in the model only", "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\ngenerated quantities { real y = normal_rng(mu, 1); }", false, false},
		{"crn", "parameters { real mu; }\nmodel { target += crn(3, -0.5 * square(mu - std_normal_rng())); }", false, true},
		{"crn with a seed", "parameters { real mu; }\nmodel { target += crn(3, -0.5 * square(mu - std_normal_rng()), seed = 7); }", false, false},
	} {
		digest := map[uint64]string{}
		for _, seed := range []uint64{1, 2, 1} {
			bm := bindBuiltins(t, "t.shm", c.src, nil, Options{Seed: seed})
			d, ok := bm.RandomTransformedDataSHA256()
			if ok != c.randomTD || ok != (d != "") {
				t.Errorf("%s, seed %d: transformed data digest %q, %v; want one: %v", c.name, seed, d, ok, c.randomTD)
			}
			if prev, seen := digest[seed]; seen && prev != d {
				t.Errorf("%s, seed %d: digests %s and %s", c.name, seed, prev, d)
			}
			digest[seed] = d
			s, ok := bm.CRNSeed()
			if ok != c.crnFromSeed || ok && s != seed {
				t.Errorf("%s, seed %d: crn seed %d, %v; want %v", c.name, seed, s, ok, c.crnFromSeed)
			}
		}
		if c.randomTD && digest[1] == digest[2] {
			t.Errorf("%s: the digests of seeds 1 and 2 are the same, %s", c.name, digest[1])
		}
	}
}
