package round

import "time"

// Doubling is the delay before try n+1 after n failures in a row: first, doubled with each
// further failure, at most limit.
func Doubling(first, limit time.Duration, failures int) time.Duration {
	d := first
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
