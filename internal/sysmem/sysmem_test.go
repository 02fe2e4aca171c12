package sysmem

import "testing"

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
	total := Total()
	if total == 0 {
		t.Skip("the memory of this system is unknown")
	}
	if m := MaxElements(); m <= 0 || uint64(m)*16 > total+16 {
		t.Errorf("MaxElements() = %d for %d bytes of memory", m, total)
	}
}
