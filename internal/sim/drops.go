package sim

// dropLogEvery is how many drops pass between two warnings about the same cap: once a cap is
// reached every new object drops an old one, and a warning each time would make the log (and
// the lock it is written under) the simulator's main work.
const dropLogEvery = 10_000

// drops counts the objects a cap dropped, and says when to warn about them.
type drops struct {
	total int
}

// add counts n drops and reports whether to warn: at the first drop, and at every
// dropLogEvery-th after it.
func (d *drops) add(n int) bool {
	if n <= 0 {
		return false
	}
	before := d.total
	d.total += n
	return before == 0 || before/dropLogEvery != d.total/dropLogEvery
}
