package segbit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// turnstile runs the Do calls of two concurrent commands in a given
// order: call i goes to the party order[i] names, the other waits. Calls
// beyond the order run as they come.
type turnstile struct {
	f     *fakeBackend
	mu    sync.Mutex
	cond  *sync.Cond
	order []int
	next  int
	done  [2]bool // a party that is done gives up its turns
}

func (ts *turnstile) finish(party int) {
	ts.mu.Lock()
	ts.done[party] = true
	ts.cond.Broadcast()
	ts.mu.Unlock()
}

type partyBackend struct {
	ts    *turnstile
	party int
}

func (p partyBackend) Do(ctx context.Context, cmds [][][]byte) ([]resp.Value, error) {
	ts := p.ts
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for ts.next < len(ts.order) && ts.order[ts.next] != p.party && !ts.done[ts.order[ts.next]] {
		ts.cond.Wait()
	}
	ts.next++
	ts.cond.Broadcast()
	return ts.f.Do(ctx, cmds)
}

// interleavings returns every order of a calls of party 0 and b of party 1.
func interleavings(a, b int) [][]int {
	if a == 0 && b == 0 {
		return [][]int{nil}
	}
	var out [][]int
	if a > 0 {
		for _, rest := range interleavings(a-1, b) {
			out = append(out, append([]int{0}, rest...))
		}
	}
	if b > 0 {
		for _, rest := range interleavings(a, b-1) {
			out = append(out, append([]int{1}, rest...))
		}
	}
	return out
}

// TestDelRacingWrites runs a DEL of a bitmap against a SETBIT or BITOP
// writing it, in every interleaving of their node round trips, and checks
// that no segment is left that the index does not name: such a segment
// is invisible to BITCOUNT and to a later DEL while GETBIT still reads it.
// (Writes used to index before writing and DEL to drop the whole index
// after the segments: a SETBIT landing between DEL's two steps was
// orphaned.)
func TestDelRacingWrites(t *testing.T) {
	h := newHandler(t, 12)
	setup := [][]string{
		{"SEGBIT.SETBIT", "k", "5", "1"},
		{"SEGBIT.SETBIT", "k", u(3 << 12), "1"},
		{"SEGBIT.SETBIT", "src", u(7 << 12), "1"},
	}
	writes := [][]string{
		{"SEGBIT.SETBIT", "k", "6", "1"},          // an indexed segment
		{"SEGBIT.SETBIT", "k", u(9 << 12), "1"},   // a new segment
		{"SEGBIT.SETBIT", "k", u(1<<40 + 3), "1"}, // a new index path
		{"SEGBIT.BITOP", "OR", "k", "src"},        // writes and deletes
		{"SEGBIT.BITOP", "AND", "k", "k", "src"},  // deletes stale ones
		{"SEGBIT.DEL", "k"},                       // two DELs
	}
	calls := func(args []string, del bool) int {
		f := newFake(t)
		for _, s := range setup {
			mustInt(t, h, f, s...)
		}
		before := f.calls
		if del {
			mustInt(t, h, f, "SEGBIT.DEL", "k")
		} else if _, err := do(t, h, f, args...); err != nil {
			t.Fatal(err)
		}
		return f.calls - before
	}
	for _, w := range writes {
		nw, nd := calls(w, false), calls(nil, true)
		for _, order := range interleavings(nw, nd) {
			t.Run(fmt.Sprintf("%v/%v", w, order), func(t *testing.T) {
				f := newFake(t)
				for _, s := range setup {
					mustInt(t, h, f, s...)
				}
				ts := &turnstile{f: f, order: order}
				ts.cond = sync.NewCond(&ts.mu)
				var wg sync.WaitGroup
				var werr, derr error
				wg.Add(2)
				go func() {
					defer wg.Done()
					defer ts.finish(0)
					_, werr = h.Exec(context.Background(), partyBackend{ts, 0}, bytesArgs(w))
				}()
				go func() {
					defer wg.Done()
					defer ts.finish(1)
					_, derr = h.Exec(context.Background(), partyBackend{ts, 1}, bytesArgs([]string{"SEGBIT.DEL", "k"}))
				}()
				wg.Wait()
				if werr != nil || derr != nil {
					t.Fatalf("write: %v, DEL: %v", werr, derr)
				}
				checkIndex(t, h, f)
			})
		}
	}
}

func bytesArgs(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}
