package qemuvm

import "testing"

// One TCG guest of a process at a time runs at TCGNice: the slot is
// taken once, refused while held, and free again after release.
func TestOneGuestAtATimeHasPriority(t *testing.T) {
	if !takePriority() {
		t.Fatal("the slot was taken before the test")
	}
	defer releasePriority()
	if takePriority() {
		t.Fatal("a second guest got the slot while the first held it")
	}
	releasePriority()
	if !takePriority() {
		t.Fatal("the slot did not come back after release")
	}
}
