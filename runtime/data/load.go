package data

import (
	"fmt"
	"strings"

	"github.com/shmlang/shm/internal/sysmem"
)

// Load reads data files (CSV, or CmdStan JSON for a .json name) and
// --set arguments ("name=value") into one Set, as the command line gives
// them. The files together give at most MaxValues numbers, as each does.
// A name given by two --set arguments is an error; a --set that
// replaces a file's value is noted (Set.Notes), not silent.
func Load(files, sets []string) (*Set, error) {
	set := &Set{}
	limit, total := MaxValues(), int64(0)
	for _, f := range files {
		vals, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		// Each file is bounded as it is read; together they are bounded
		// by the same MaxValues, checked after each (many files, each
		// within its bound, filled the memory).
		for _, v := range vals {
			total += int64(len(v.Data))
		}
		if limit > 0 && total > limit {
			return nil, fmt.Errorf("%s: the data files up to this one give %d numbers, more than the data may give together (%d: %s, a sixty-fourth of %s)",
				f, total, limit, sysmem.Bytes(float64(8*limit)), sysmem.Source())
		}
		if err := set.AddFile(vals); err != nil {
			return nil, err
		}
	}
	given := map[string]string{} // name -> its --set argument
	for _, s := range sets {
		v, err := ParseSet(s)
		if err != nil {
			return nil, err
		}
		arg := shorten(strings.TrimSpace(s))
		if prev, dup := given[v.Name]; dup {
			return nil, fmt.Errorf("--set %s is given twice (--set %s and --set %s)", v.Name, prev, arg)
		}
		given[v.Name] = arg
		if f := set.fromFile[v.Name]; f != nil {
			set.notes = append(set.notes, fmt.Sprintf("--set %s replaces the value in %s", arg, f.placeInFile()))
		}
		set.AddSet(v)
	}
	return set, nil
}
