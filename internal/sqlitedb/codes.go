package sqlitedb

// SQLite result codes the stores map to mnemo's sentinels. Code returns
// the extended code; the primary code is its low byte.
const (
	CodeBusy             = 5
	CodeReadOnly         = 8
	CodeIOErr            = 10
	CodeCorrupt          = 11
	CodeFull             = 13
	CodeCantOpen         = 14
	CodeConstraint       = 19
	CodeNotADB           = 26
	CodeConstraintUnique = 2067 // SQLITE_CONSTRAINT_UNIQUE
	CodeConstraintPK     = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
)

// Primary returns the primary result code of an extended one.
func Primary(code int) int { return code & 0xFF }
