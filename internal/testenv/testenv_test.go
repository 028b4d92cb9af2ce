package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDataset_MissingFailsUnderCI runs a test looking for a dataset that
// does not exist in a child process: it skips, and fails with CI=true.
func TestDataset_MissingFailsUnderCI(t *testing.T) {
	if os.Getenv("MNEMO_TESTENV_CHILD") == "1" {
		Dataset(t, "no-such-dataset-ever")
		return
	}
	t.Parallel()
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantText string
	}{
		{"", false, "SKIP"},
		{"true", true, "CI=true"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestDataset_MissingFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "MNEMO_TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantFail || !strings.Contains(string(out), tc.wantText) {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant failure %v mentioning %q", tc.ci, err, out, tc.wantFail, tc.wantText)
		}
	}
}
