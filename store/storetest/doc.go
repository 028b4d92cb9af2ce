// Package storetest is the conformance suite of the storage port: every
// store.Store implementation (SQLite now, Postgres next) runs Exercise from
// its own tests, so all backends agree on the contract the engine relies on
// (river's riverdrivertest.Exercise is the model).
//
//	func TestStore_Conformance(t *testing.T) {
//		storetest.Exercise(t, func(t *testing.T) store.Store {
//			s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The package also provides GenerateMemories, a deterministic source of
// realistic bulk data for backend benchmarks.
package storetest
