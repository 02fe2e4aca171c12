package data

// Load reads data files (CSV, or CmdStan JSON for a .json name) and
// --set arguments ("name=value") into one Set, as the command line gives
// them.
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
	for _, s := range sets {
		v, err := ParseSet(s)
		if err != nil {
			return nil, err
		}
		set.AddSet(v)
	}
	return set, nil
}
