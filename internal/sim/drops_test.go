package sim

import "testing"

func TestDropsWarnAtTheFirstAndEveryTenThousandth(t *testing.T) {
	t.Parallel()
	var d drops
	var warned []int
	for i := 1; i <= 3*dropLogEvery; i++ {
		if d.add(1) {
			warned = append(warned, i)
		}
	}
	want := []int{1, dropLogEvery, 2 * dropLogEvery, 3 * dropLogEvery}
	if len(warned) != len(want) {
		t.Fatalf("warned at %v, want %v", warned, want)
	}
	for i := range want {
		if warned[i] != want[i] {
			t.Fatalf("warned at %v, want %v", warned, want)
		}
	}
	if d.add(0) || d.total != 3*dropLogEvery {
		t.Fatalf("no drop warned or counted: total %d", d.total)
	}
	if !d.add(dropLogEvery) {
		t.Fatal("a batch that crosses a multiple was not warned")
	}
}
