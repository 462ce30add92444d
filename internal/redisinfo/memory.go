package redisinfo

import (
	"fmt"
	"strconv"
)

// BytesToHuman formats a byte count as Redis's bytesToHuman does for
// INFO's *_human fields.
func BytesToHuman(n int64) string {
	const k = 1024.0
	f := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case f < k*k:
		return fmt.Sprintf("%.2fK", f/k)
	case f < k*k*k:
		return fmt.Sprintf("%.2fM", f/(k*k))
	case f < k*k*k*k:
		return fmt.Sprintf("%.2fG", f/(k*k*k))
	case f < k*k*k*k*k:
		return fmt.Sprintf("%.2fT", f/(k*k*k*k))
	case f < k*k*k*k*k*k:
		return fmt.Sprintf("%.2fP", f/(k*k*k*k*k))
	}
	return strconv.FormatInt(n, 10) + "B"
}
