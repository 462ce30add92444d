package resp

import (
	"io"
	"testing"
)

// fuzzParse parses data delivered in the chunk sizes chunks gives (all at
// once when chunks is empty), checking the Reader's memory bounds as it
// goes.
func fuzzParse(t *testing.T, data []byte, chunks []int, unauth bool) parseResult {
	r := NewReader(&chunkReader{data: data, chunks: chunks})
	r.Unauthenticated = unauth
	var res parseResult
	nargs := 0
	for {
		args, ok, err := r.Next()
		if err != nil {
			if _, isProto := err.(*ProtocolError); !isProto {
				t.Fatalf("non-protocol error %v", err)
			}
			res.err = err
			return res
		}
		if ok {
			if len(args) == 0 {
				t.Fatal("empty command returned")
			}
			cmd := make([]string, len(args))
			for i, a := range args {
				if cap(a) != len(a) {
					t.Fatal("argument with spare capacity aliases the buffer")
				}
				cmd[i] = string(a)
			}
			nargs += len(args)
			res.cmds = append(res.cmds, cmd)
			continue
		}
		if err := r.Fill(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		// The buffer only doubles when full, so it never exceeds twice
		// the bytes received; arguments cost at most a few words per
		// byte of input, whatever counts the input claims.
		if len(r.buf) > max(initialReaderBufferSize, 2*len(data)) {
			t.Fatalf("buffer %d bytes for %d bytes of input", len(r.buf), len(data))
		}
		if cap(r.args) > 2*len(data)+4 || cap(r.offs) > 2*len(data)+4 {
			t.Fatalf("argument slices %d/%d for %d bytes of input", cap(r.args), cap(r.offs), len(data))
		}
	}
	if nargs > len(data) {
		t.Fatalf("%d arguments from %d bytes", nargs, len(data))
	}
	return res
}

// FuzzReader: however the stream is cut into reads, the Reader makes the
// same commands and the same error of it as when it arrives in one piece;
// it never panics and its memory stays proportional to its input.
func FuzzReader(f *testing.F) {
	for _, c := range readerCases {
		if len(c.in) <= 4096 {
			f.Add([]byte(c.in), []byte{1, 3, 200}, c.unaut)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, cuts []byte, unauth bool) {
		whole := fuzzParse(t, data, nil, unauth)
		chunks := make([]int, len(cuts))
		for i, c := range cuts {
			chunks[i] = int(c) + 1
		}
		if len(chunks) == 0 {
			chunks = []int{1}
		}
		if got := fuzzParse(t, data, chunks, unauth); !sameResult(got, whole) {
			t.Fatalf("chunks %v:\n got %v\nwhole %v", chunks, got, whole)
		}
	})
}
