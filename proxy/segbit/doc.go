// Package segbit serves segmented bitmaps: logical bitmaps whose bit
// offsets run from 0 to 2^63-1, stored as many ordinary node bitmaps
// ("segments") spread over the cluster. The proxy hands it SETBIT, GETBIT,
// BITCOUNT, BITPOS, BITOP and DEL on keys that match a --segment-keys glob,
// and the explicit SEGBIT.* commands on any key; segbit turns each into
// node commands, runs them through a Backend, and merges the replies into
// what one huge Redis bitmap would answer.
//
// # Key layout
//
// A logical bitmap K with segment size S = 2^b bits (b = --segment-bits,
// 12..32, default 23, i.e. 1 MB per segment) stores bit o in segment
// i = o / S at local offset o % S, in the node key
//
//	"{sg:" + decimal(i) + "}" + K        e.g. {sg:596}dau:2024-05-01
//
// The hash tag is built from i alone, so segment i of every segmented
// bitmap lives in the same slot (BITOP runs node-locally, segment by
// segment) while different segment numbers spread over the 16384 slots.
//
// The index of K records which segments exist, so that BITCOUNT, BITPOS,
// BITOP and DEL never scan the keyspace. It is a bitmap tree of up to
// three levels with a fanout of 2^17 (each index key is at most 16 KB):
// with D = 63 - b bits in a segment number and L = ceil(D/17) levels,
// level l (0 = root) holds, for segment i, the bit
// (i >> 17*(L-1-l)) & (2^17-1) in index key number n = i >> 17*(L-l):
//
//	"{sgi:" + decimal(slot(K)) + "}" + decimal(l) + ":" + decimal(n) + ":" + K
//	e.g. {sgi:6206}0:0:dau:2024-05-01 (the root), {sgi:6206}2:0:dau:2024-05-01
//
// All index keys of K share one slot, chosen by K's own slot (the tag is
// the number of K's slot; K may contain braces, so it cannot be the tag).
// With the default b = 23, L = 3: a bitmap whose bits lie below 2^40
// needs one key per level. Keys beginning with "{sg:" or "{sgi:" are
// reserved for segmented bitmaps.
//
// The logical length of K (1 + the highest byte ever written, which is
// what negative BITCOUNT/BITPOS ranges and BITOP count from) is not stored
// separately: segments only grow, so it is i*S/8 + STRLEN(segment i) for
// the highest segment i that exists.
//
// # Consistency
//
// Writes write a segment before they add it to the index; deletes take a
// segment out of the index before they delete it. Together they keep the
// invariant that every segment that exists is named by the index, except
// while the write that creates it is in flight, whatever the
// interleaving: for a segment to end up existing but unindexed, its write
// would have to land after the delete while its index bit went before
// the delete's clearing, and the write's bit comes after its segment. DEL
// takes the bottom index level out with GETDEL and puts back, with its
// segment deletes, every bit the GETDEL returned that its own index scan
// had not seen (a segment a concurrent write added meanwhile, which
// stays). The upper index levels stay after a DEL (a few bytes per
// bitmap, at most 16 KB for segment numbers past 2^17): a write racing
// the DEL may need the path they hold, and an upper bit with nothing
// below costs one read. A DEL that fails after taking bits out puts them
// back, so a DEL run again finds what is left. The index may name a
// segment that a failed or racing write or delete left absent; reads
// treat it as empty.
//
// Atomicity is per segment: each node command is atomic on its node, so a
// SETBIT or GETBIT (one segment) is atomic, and a BITOP on one segment
// number is atomic on that node. Commands that span segments are not
// atomic as a whole: BITCOUNT, BITPOS and BITOP read segments in parallel
// without a snapshot, so they can see some of a concurrent writer's
// segments and not others, and a concurrent BITOP or DEL on the same
// destination can interleave segment by segment. A failed part fails the
// whole command with an error that names the segment or index key, and may
// leave a multi-segment write half done (BITOP can simply be run again,
// except XOR or NOT with the destination among the sources, which would
// apply twice on the segments done; DEL too). A failed BITOP puts back
// the index bits of every destination segment it touched. A SETBIT that fails between its segment and its index leaves
// a bit that GETBIT reads and BITCOUNT does not count until the SETBIT is
// retried.
//
// BITOP NOT writes every segment below the logical length (a full
// segment of ones where the source has none), so it is refused beyond
// MaxNotSegments segments.
//
// # Fan-out
//
// Each step of an operation (read the index level by level, read segment
// lengths, write index bits, run the segment commands) is one Backend.Do
// call carrying all of that step's commands, which the Backend runs in
// parallel over the nodes; steps with more than maxBatch commands are cut
// into several calls to bound memory. A Handler keeps no state between
// commands and is safe for concurrent use.
package segbit
