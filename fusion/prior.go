package fusion

import "github.com/mnemo-dev/mnemo/mnemotype"

// ImportanceMode selects how a memory's importance adjusts its fused score.
type ImportanceMode string

// Importance modes.
const (
	// ImportanceMultiplier applies score × (0.7 + 0.3·importance), the default.
	ImportanceMultiplier ImportanceMode = "multiplier"
	// ImportanceBoost adds 1/(k+1) − 1/(k+11) to memories with importance ≥
	// HighImportance, leaving the others unchanged.
	ImportanceBoost ImportanceMode = "boost"
	// ImportanceOff leaves fused scores unchanged.
	ImportanceOff ImportanceMode = "off"
)

// HighImportance is the threshold of ImportanceBoost.
const HighImportance = 0.8

// ParseImportanceMode validates s; the empty string yields ImportanceMultiplier.
func ParseImportanceMode(s string) (ImportanceMode, error) {
	switch m := ImportanceMode(s); m {
	case "":
		return ImportanceMultiplier, nil
	case ImportanceMultiplier, ImportanceBoost, ImportanceOff:
		return m, nil
	default:
		return "", mnemotype.Invalidf("importance mode %q: must be one of multiplier, boost, off", s)
	}
}

// Prior returns score adjusted by the importance prior for an item of
// importance imp in [0, 1]: scaled by 0.7 + 0.3·imp (ImportanceMultiplier),
// raised by the RRF gap between ranks 1 and 11 for an item of
// HighImportance or more (ImportanceBoost, k the RRF constant, DefaultK
// when ≤ 0), or left as it is (ImportanceOff).
func Prior(score, imp float64, mode ImportanceMode, k float64) float64 {
	switch mode {
	case ImportanceOff:
		return score
	case ImportanceBoost:
		if k <= 0 {
			k = DefaultK
		}
		if imp >= HighImportance {
			return score + (1/(k+1) - 1/(k+11)) // the gap first, as ApplyImportance always added it
		}
		return score
	default:
		return score * (0.7 + 0.3*imp)
	}
}
