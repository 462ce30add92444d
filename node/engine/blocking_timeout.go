package engine

import (
	"math"
	"math/big"

	"github.com/shardgate/shardgate/internal/resp"
)

// ParseTimeout parses a blocking command's timeout in seconds as Redis
// 7.0's getTimeoutFromObjectOrReply does with UNIT_SECONDS: the argument
// is read as a C long double (string2ld), multiplied by 1000 in long
// double and rounded up, (long long) ceill(ftval * 1000.0). So a timeout
// of a fraction of a millisecond is 1 ms, a slightly negative one is 0
// (block forever), and a value the conversion cannot represent (an
// infinity or 2^63 ms and beyond) becomes LLONG_MIN on x86-64, which Redis
// then refuses as negative. It returns the milliseconds (0 = forever) or
// the error text to reply.
func ParseTimeout(b []byte) (ms int64, errText string) {
	d, ok := parseLongDouble(b)
	if !ok {
		return 0, resp.ErrTimeoutNotFloat
	}
	if d.IsInf() {
		return 0, resp.ErrTimeoutNegative
	}
	var x big.Float
	x.SetPrec(ldMantBits).SetMode(big.ToNearestEven)
	x.Mul(&d.f, big.NewFloat(1000))
	if x.MantExp(nil) > ldMaxExp {
		return 0, resp.ErrTimeoutNegative // overflowed to infinity
	}
	v, acc := x.Int64() // truncated toward zero; MinInt64 below -2^63
	if acc == big.Below && x.Sign() > 0 {
		if v == math.MaxInt64 {
			return 0, resp.ErrTimeoutNegative // 2^63: x87's "integer indefinite", LLONG_MIN
		}
		v++ // ceill
	}
	if x.Cmp(two63) >= 0 {
		return 0, resp.ErrTimeoutNegative
	}
	if v < 0 {
		return 0, resp.ErrTimeoutNegative
	}
	return v, ""
}

// two63 is 2^63, the first millisecond count a long long cannot hold.
var two63 = new(big.Float).SetMantExp(big.NewFloat(1), 63)
