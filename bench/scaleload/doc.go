// Package scaleload is a load generator that also proves nothing was
// lost: it writes a dataset through one endpoint (the shardgate proxy),
// runs a mix of reads and writes while nodes join and drain and slots
// migrate, and then reads every key back and compares it with a model of
// what every acknowledged write must have left.
//
// # Dataset
//
// Populate writes Config.Keys keys (200,000 by default) in groups. A group
// is a few keys of one Kind under one hash tag, so its multi-key commands
// (MSET, MGET, LMOVE q p, RPOPLPUSH, MULTI ... EXEC) run in one slot; the
// tags are chosen so the groups cover every one of the 16384 slots (or,
// with fewer groups than slots, are spread evenly over them). The kinds:
// strings with and without expiry and counters, sparse bitmaps with bits
// up to Config.BitmapMaxOffset, HyperLogLogs (some dense), reliable queues
// (LPUSH, then LMOVE/BLMOVE/RPOPLPUSH into a processing list, LREM as the
// acknowledgement) and streams with a consumer group whose pending entries
// move between consumers (XADD, XREADGROUP, XCLAIM, XACK). One group in
// 61 holds large values (64 KB strings or a 64 KB stream entry, 1000
// bits in a bitmap, 5000 elements in a dense HLL).
//
// # The model and ambiguity
//
// Run gives each worker its own groups, so a group's commands are sent in
// order by one client and the model predicts every reply: LMOVE must
// return the model's oldest waiting job, SETBIT the old bit, INCR the next
// value, XREADGROUP exactly the next entries. A contradiction is a
// mismatch. A write whose reply is an error or never comes (a timeout, a
// broken connection) is ambiguous: it counts as a client-visible error
// (issue 8 wants none during a normal scale-out), and the group may hold
// the state before it or the state after it. The group rests for
// Config.Settle, then Run reads it back and adopts whichever of the two it
// finds; anything else is a failure. Nothing is retried by the client
// (go-redis's retries are off), so no error is hidden and no write is
// applied twice behind the model's back.
//
// # Use
//
//	m, err := scaleload.Populate(ctx, cfg)
//	stats, err := scaleload.Run(runCtx, cfg, m) // until runCtx ends
//	report, err := scaleload.Verify(ctx, cfg, m)
//	if !report.OK() { ... report.Failures ... }
//
// Stats has per-window throughput and latency percentiles (Config.Window,
// Config.OnWindow) and Stats.Between merges windows into a phase (before,
// during, after a scale-out), plus per-command figures and the first
// error texts. Config.Rate paces the workers to a fixed total rate, so
// latency is compared at the same load before, during and after a
// scale-out instead of at whatever a saturated closed loop reaches. The
// command in cmd/scaleload runs the three steps and prints windows as a
// table or JSON lines.
package scaleload
