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
// memory (ulimit -v), Total is what is left of that limit after the
// mappings the process already has (over a gigabyte of the Go runtime's
// reservations) and its threads' reserve, and Beyond names it; the test
// runs itself again in a shell that lowers the limit.
func TestTotalUnderRlimit(t *testing.T) {
	if os.Getenv("SYSMEM_HELPER") == "1" {
		used, _ := addressSpaceUsed()
		total, source := Total()
		fmt.Printf("total=%d used=%d source=%s beyond=%s\n", total, used, source, Beyond())
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("Total reads limits on Linux only")
	}
	machine, _ := Total()
	const limitKiB = 4000000 // about 3.8 GiB
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
	var total, used uint64
	var rest string
	if _, err := fmt.Sscanf(string(out), "total=%d used=%d source=%s", &total, &used, &rest); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	reserve := used + threadReserve*uint64(runtime.GOMAXPROCS(0)+4)
	want := uint64(1)
	if reserve < limitKiB*1024 {
		want = limitKiB*1024 - reserve
	}
	// The child's GOMAXPROCS is this process's; its mappings grow a
	// little between the two readings.
	if total > want+64<<20 || total+64<<20 < want || used < 256<<20 {
		t.Errorf("total %d with %d bytes mapped, want about %d: %s", total, used, want, out)
	}
	if !strings.Contains(string(out), "source=the address space left under ulimit -v beyond=more than half of the address space left under ulimit -v (") {
		t.Errorf("got %s", out)
	}
}
