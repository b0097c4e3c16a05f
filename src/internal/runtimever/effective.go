package runtimever

// Where an entry of the effective list comes from.
const (
	OriginShipped  = "shipped"
	OriginReplaced = "operator, replaces shipped"
	OriginAdded    = "operator"
)

// Listed is one entry of the effective list and where it comes from.
type Listed struct {
	Advisory
	Origin string
}

// EffectiveSet is what runtime-versions matches: the shipped list merged
// with the operator's file, as Load merges them, each entry with its
// origin, and the shipped ids the file disabled.
type EffectiveSet struct {
	Entries  []Listed
	Disabled []string
}

// Effective returns the effective list for the operator's file at path
// under root ("" for the shipped list alone), with the same trust rule as
// Load.
func Effective(root, path string) (EffectiveSet, error) {
	shipped, err := Shipped()
	if err != nil {
		return EffectiveSet{}, err
	}
	var over []Advisory
	if path != "" {
		f, err := readOperatorFile(root, path)
		if err != nil {
			return EffectiveSet{}, err
		}
		over = f.Advisories
	}
	inShipped := map[string]bool{}
	for _, a := range shipped {
		inShipped[a.ID] = true
	}
	fromFile := map[string]bool{}
	var set EffectiveSet
	for _, a := range over {
		fromFile[a.ID] = true
		if a.Disabled && inShipped[a.ID] {
			set.Disabled = append(set.Disabled, a.ID)
		}
	}
	for _, a := range merge(shipped, over) {
		origin := OriginShipped
		switch {
		case fromFile[a.ID] && inShipped[a.ID]:
			origin = OriginReplaced
		case fromFile[a.ID]:
			origin = OriginAdded
		}
		set.Entries = append(set.Entries, Listed{Advisory: a, Origin: origin})
	}
	return set, nil
}
