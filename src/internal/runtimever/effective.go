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
// with the operator's records, as Load merges them, each entry with its
// origin, and the shipped ids the operator withdrew.
type EffectiveSet struct {
	Entries   []Listed
	Withdrawn []string
}

// Effective returns the effective list for the operator's records.
func Effective(operator []Advisory) (EffectiveSet, error) {
	shipped, err := Shipped()
	if err != nil {
		return EffectiveSet{}, err
	}
	inShipped := map[string]bool{}
	for _, a := range shipped {
		inShipped[a.ID] = true
	}
	fromOperator := map[string]bool{}
	var set EffectiveSet
	for _, a := range operator {
		fromOperator[a.ID] = true
		if a.Withdrawn && inShipped[a.ID] {
			set.Withdrawn = append(set.Withdrawn, a.ID)
		}
	}
	for _, a := range merge(shipped, operator) {
		origin := OriginShipped
		switch {
		case fromOperator[a.ID] && inShipped[a.ID]:
			origin = OriginReplaced
		case fromOperator[a.ID]:
			origin = OriginAdded
		}
		set.Entries = append(set.Entries, Listed{Advisory: a, Origin: origin})
	}
	return set, nil
}
