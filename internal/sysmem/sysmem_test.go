package sysmem

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    float64
		want string
	}{{0, "0 B"}, {512, "512 B"}, {1536, "1.5 KiB"}, {16 << 30, "16.0 GiB"}, {200 << 30, "200 GiB"}} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%g) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestMaxElements(t *testing.T) {
	total, source := Total()
	if total == 0 {
		t.Skip("the memory of this system is unknown")
	}
	if source == "" {
		t.Error("Total gives no source")
	}
	if m := MaxElements(); m <= 0 || uint64(m)*16 > total+16 {
		t.Errorf("MaxElements() = %d for %d bytes of memory", m, total)
	}
}

// TestTotalUnderRlimit: under an address-space limit below the machine's
// memory (ulimit -v), Total is that limit and Beyond names it; the test
// runs itself again in a shell that lowers the limit.
func TestTotalUnderRlimit(t *testing.T) {
	if os.Getenv("SYSMEM_HELPER") == "1" {
		total, source := Total()
		fmt.Printf("total=%d source=%s beyond=%s\n", total, source, Beyond())
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("Total reads limits on Linux only")
	}
	machine, _ := Total()
	const limitKiB = 3000000 // about 2.9 GiB
	if machine != 0 && machine <= limitKiB*1024 {
		t.Skipf("this machine's limit (%d bytes) is already below the test's", machine)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -v %d && exec \"$0\" -test.run '^TestTotalUnderRlimit$'", limitKiB), exe)
	cmd.Env = append(os.Environ(), "SYSMEM_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := fmt.Sprintf("total=%d source=the address-space limit (ulimit -v) beyond=more than half of the address-space limit (ulimit -v) (2.9 GiB)", limitKiB*1024)
	if !strings.Contains(string(out), want) {
		t.Errorf("got %s\nwant %s", out, want)
	}
}
