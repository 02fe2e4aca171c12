package data

import (
	"fmt"
	"strings"
)

// Load reads data files (CSV, or CmdStan JSON for a .json name) and
// --set arguments ("name=value") into one Set, as the command line gives
// them. A name given by two --set arguments is an error; a --set that
// replaces a file's value is noted (Set.Notes), not silent.
func Load(files, sets []string) (*Set, error) {
	set := &Set{}
	for _, f := range files {
		vals, err := ReadFile(f)
		if err != nil {
			return nil, err
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
