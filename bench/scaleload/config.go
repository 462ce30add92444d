package scaleload

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Config's fields.
const (
	DefaultKeys            = 200000
	DefaultWorkers         = 16
	DefaultPrefix          = "sl"
	DefaultTTL             = time.Hour
	DefaultTTLTolerance    = time.Second
	DefaultTimeout         = 5 * time.Second
	DefaultSettle          = 10 * time.Second
	DefaultWindow          = time.Second
	DefaultReadRatio       = 0.5
	DefaultBitmapMaxOffset = 4_000_000
	DefaultMaxSamples      = 20
	DefaultVerifyAttempts  = 3
)

// MinKeys is the smallest key count: enough for a few groups of each kind.
const MinKeys = 50

// Config says where the load goes and what it looks like. The zero value
// of every field but Addr means its default.
type Config struct {
	// Addr is the one endpoint (the shardgate proxy), host:port.
	Addr string
	// Username and Password authenticate every connection when set.
	Username, Password string
	// Protocol is the RESP version go-redis speaks (2 or 3; 0: go-redis's
	// default).
	Protocol int

	// Keys is the number of keys Populate writes (DefaultKeys), over all
	// 16384 slots.
	Keys int
	// Workers is the number of concurrent clients of Populate, Run and
	// Verify (DefaultWorkers); each owns a share of the key groups during
	// Run, so the model needs no locks.
	Workers int
	// Seed makes the dataset and the operation sequence of each worker
	// reproducible (0 is a seed like any other).
	Seed int64
	// Prefix starts every hash tag (DefaultPrefix), so runs with different
	// prefixes do not touch each other's keys. Populate deletes the keys
	// of its own prefix first.
	Prefix string

	// TTL is the expiry given to the keys written with one (DefaultTTL):
	// long, so nothing expires during a run unless something is wrong.
	TTL time.Duration
	// TTLTolerance is how far a key's expiry read back (PTTL) may be from
	// the absolute expiry the model recorded (DefaultTTLTolerance).
	TTLTolerance time.Duration
	// BitmapMaxOffset bounds SETBIT offsets (DefaultBitmapMaxOffset).
	BitmapMaxOffset int64
	// ReadRatio is the share of reads among Run's operations
	// (DefaultReadRatio; negative: writes only).
	ReadRatio float64
	// Rate caps Run's operations per second over all workers (0: as fast
	// as the workers go).
	Rate float64

	// Timeout is each command's read and write timeout (DefaultTimeout).
	// A command that times out is an ambiguous write.
	Timeout time.Duration
	// Settle is how long after an ambiguous write Run waits before it
	// re-reads the group to learn whether the write happened
	// (DefaultSettle): long enough that a command still held somewhere
	// (a proxy retrying a redirection) has landed or never will.
	Settle time.Duration
	// Window is the length of Run's stats windows (DefaultWindow).
	Window time.Duration
	// OnWindow, when set, is called with each window as it closes (calls
	// never overlap; the last comes before Run returns).
	OnWindow func(Window)
	// MaxSamples caps the error texts kept by Stats and the failures kept
	// by a Report (DefaultMaxSamples).
	MaxSamples int
	// VerifyAttempts is how often Verify reads a group whose read fails
	// before it counts it as failed (DefaultVerifyAttempts).
	VerifyAttempts int
}

// withDefaults returns c with its zero fields set to their defaults, or
// an error for a field that cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		return c, errors.New("scaleload: Config.Addr is empty")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Keys, DefaultKeys)
	def(&c.Workers, DefaultWorkers)
	def(&c.MaxSamples, DefaultMaxSamples)
	def(&c.VerifyAttempts, DefaultVerifyAttempts)
	defDur(&c.TTL, DefaultTTL)
	defDur(&c.TTLTolerance, DefaultTTLTolerance)
	defDur(&c.Timeout, DefaultTimeout)
	defDur(&c.Settle, DefaultSettle)
	defDur(&c.Window, DefaultWindow)
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.BitmapMaxOffset == 0 {
		c.BitmapMaxOffset = DefaultBitmapMaxOffset
	}
	if c.ReadRatio == 0 {
		c.ReadRatio = DefaultReadRatio
	}
	switch {
	case c.Keys < MinKeys:
		return c, fmt.Errorf("scaleload: Config.Keys %d is below %d", c.Keys, MinKeys)
	case c.Workers < 1:
		return c, fmt.Errorf("scaleload: Config.Workers %d is below 1", c.Workers)
	case c.BitmapMaxOffset < 2*firstPageBits || c.BitmapMaxOffset > 1<<32:
		return c, fmt.Errorf("scaleload: Config.BitmapMaxOffset %d is outside [%d, 2^32]", c.BitmapMaxOffset, 2*firstPageBits)
	case c.ReadRatio >= 1:
		return c, fmt.Errorf("scaleload: Config.ReadRatio %v leaves no writes", c.ReadRatio)
	case c.Rate < 0:
		return c, fmt.Errorf("scaleload: Config.Rate %v is negative", c.Rate)
	case c.TTL < time.Minute:
		return c, fmt.Errorf("scaleload: Config.TTL %v is under a minute: keys would expire during the run", c.TTL)
	case c.TTLTolerance < 0 || c.Timeout < 0 || c.Settle < 0 || c.Window < 0:
		return c, errors.New("scaleload: negative duration in Config")
	case c.MaxSamples < 0 || c.VerifyAttempts < 0:
		return c, errors.New("scaleload: negative count in Config")
	}
	return c, nil
}

// client returns a go-redis client for c with room for n concurrent
// commands. Retries are off: every ambiguity must reach the model.
func (c Config) client(n int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            c.Addr,
		Username:        c.Username,
		Password:        c.Password,
		Protocol:        c.Protocol,
		MaxRetries:      -1,
		DialTimeout:     c.Timeout,
		ReadTimeout:     c.Timeout,
		WriteTimeout:    c.Timeout,
		PoolSize:        n + 2,
		PoolTimeout:     c.Timeout,
		DisableIdentity: true,
	})
}
