package scaleload

import (
	"fmt"
	"math"
	"time"
)

// Expiries are unix milliseconds. The model knows an expiry as a range
// [lo, hi]: SET PX sets it relative to when the server ran the command,
// which lies between sending and the reply; SET PXAT knows it exactly
// (lo = hi); an ambiguous SET PX may have run any time later (hi =
// noUpperBound).

const noUpperBound = math.MaxInt64

func unixMs(t time.Time) int64 { return t.UnixMilli() }

// presence says whether a key with expiry [lo, hi] must or may exist when
// read between t0 and t1 (unix ms), tol being the clock tolerance.
func presence(lo, hi, t0, t1, tol int64) (must, may bool) {
	may = hi == noUpperBound || t0 < hi+tol
	must = t1 < lo-tol
	return must, may
}

// ttlProblem compares a PTTL reply, read between t0 and t1, with the
// expiry range [lo, hi] (lo == 0: the key has no expiry). It returns "" if
// they agree within tol.
func ttlProblem(pttl, t0, t1, lo, hi, tol int64) string {
	if lo == 0 {
		if pttl != -1 {
			return fmt.Sprintf("PTTL %d, want -1 (no expiry)", pttl)
		}
		return ""
	}
	switch pttl {
	case -1:
		return fmt.Sprintf("no expiry, want one at %d", lo)
	case -2:
		return "" // missing: the caller judges presence
	}
	// The server read its clock between t0 and t1, so the expiry it holds
	// lies in [t0+pttl, t1+pttl].
	if t1+pttl < lo-tol || (hi != noUpperBound && t0+pttl > hi+tol) {
		want := fmt.Sprintf("%d", hi)
		if hi == noUpperBound {
			want = "later"
		}
		return fmt.Sprintf("expiry %d..%d (PTTL %d), want %d..%s ±%d ms", t0+pttl, t1+pttl, pttl, lo, want, tol)
	}
	return ""
}
