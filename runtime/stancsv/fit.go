package stancsv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shmlang/shm/runtime/diag"
)

// ToFit gathers the post-warmup draws of several files of one model (one
// chain each) for the diagnostics of package diag. All files must have the
// same columns.
func ToFit(files []*File) (*diag.Fit, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("stancsv: no files")
	}
	fit := &diag.Fit{Model: files[0].Config["model"], Columns: files[0].Columns}
	for i, f := range files {
		if !slices.Equal(f.Columns, fit.Columns) {
			return nil, fmt.Errorf("stancsv: file %d has columns different from file 1", i+1)
		}
		nw, _ := f.Int("num_warmup")
		thin, _ := f.Int("thin")
		depth, _ := f.Int("max_depth")
		fit.Chains = append(fit.Chains, diag.Chain{
			Draws:           f.SamplingDraws(),
			NumWarmup:       nw,
			Thin:            thin,
			MaxDepth:        depth,
			WarmupSeconds:   f.WarmupSeconds,
			SamplingSeconds: f.SamplingSeconds,
		})
	}
	return fit, nil
}

// ReadFit reads one Stan CSV file per chain and gathers them with ToFit.
func ReadFit(paths ...string) (*diag.Fit, error) {
	files := make([]*File, 0, len(paths))
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	fit, err := ToFit(files)
	if err != nil {
		return nil, fmt.Errorf("%w (files %s)", err, strings.Join(paths, ", "))
	}
	return fit, nil
}
