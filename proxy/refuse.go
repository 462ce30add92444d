package proxy

import (
	"strings"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
)

// pipelineRefusal keeps a client's pipeline refused once its first
// command could not reach its node: the proxy answered it CLUSTERDOWN (the
// node is down, or nobody serves the slot), or, while a node is down, any
// first command answered an error a cluster client retries the pipeline
// for (settleHead). The pipeline's later commands, wherever they go, are
// then answered CLUSTERDOWN The cluster is down without running.
//
// A cluster client whose pipeline to one node gets CLUSTERDOWN for its
// first command retries the whole pipeline (go-redis's ClusterClient, up
// to 4 runs in all), and through the proxy that pipeline holds every
// command the client sends: those that ran on other nodes would run once
// more per retry. A Redis Cluster whose master died refuses every keyed
// command while its state is fail, so nothing runs twice there either. A
// command refused further down a pipeline is not retried that way, and
// the commands after it run as usual. (The node's maxclients error is
// not retried by go-redis, whose test wants "ERR max number of clients
// reached" where a cluster node says "... + cluster connections
// reached", so it refuses nothing more.)
//
// A pipeline spans reads: it goes on while more of its bytes are already
// there when the proxy has the replies to the last batch ready, before it
// writes them (a command still half read, or bytes in the socket that no
// read has taken): the client sent those before it could see the
// replies. A read that follows a batch end with nothing more waiting
// starts a pipeline, and its first command is the pipeline's
// (request.head, when it is a keyed command the proxy forwards as it is),
// as for a client that reads every reply before it sends again (a
// cluster client). The transactions that hold WATCHes run on dedicated
// connections: WATCH and EXEC check the refusal themselves. A refused
// pipeline stays refused while it goes on and some node is still down. A
// client that streams commands without waiting for replies (redis-cli
// --pipe) may pause long enough for the proxy to find nothing waiting:
// the rest is then taken for a new pipeline.
type pipelineRefusal struct {
	on   bool
	more bool // more bytes were waiting at the last batch end
	// headPreset: a request of the batch's first command was answered
	// CLUSTERDOWN without being sent (a slot nobody serves).
	headPreset bool
}

// refuses reports whether the batch's requests for reachable nodes are
// refused: the pipeline is refused, or its first command got CLUSTERDOWN
// without being sent. Every request of a batch comes from the first
// command a read brought or a later one, so all but the first command's
// own (on the node out of reach, or nowhere) are refused.
func (p *pipelineRefusal) refuses() bool { return p.on || p.headPreset }

// begin marks the pipeline refused.
func (p *pipelineRefusal) begin() { p.on = true }

// markHead marks r, the one request of a pipeline's first command, a keyed
// command whose reply is its node's (or, with the node out of reach, the
// proxy's CLUSTERDOWN). The proxy's own requests (fan-outs, split parts,
// segmented bitmaps, INFO) are never the head: their commands answer
// otherwise when a node is out of reach.
func (p *pipelineRefusal) markHead(r *request) {
	r.head = true
	if r.node == noOwner {
		p.headPreset = true // answered CLUSTERDOWN already: no owner
	}
}

// batchReset forgets the batch's preset requests.
func (p *pipelineRefusal) batchReset() { p.headPreset = false }

// settleHead runs a pipeline's first command on its own, while a node is
// down, and refuses the rest if its reply is one a cluster client retries
// the whole pipeline for: a fan-out's or a segmented bitmap's CLUSTERDOWN
// (the proxy's own, for the node out of reach or loading), or a node's
// TRYAGAIN passed on. The request of a keyed first command is refused
// before anything is sent (sendQueued); the others' replies are known
// only once they ran. It costs a round trip per pipeline, only while a
// node is down.
func (c *client) settleHead() {
	mark := len(c.w.B)
	c.finishBatch()
	if r := c.w.B[mark:]; len(r) > 0 && (r[0] == '-' || r[0] == '!') && retriedWhole(errorReplyMsg(r)) {
		c.refused.begin()
	}
}

// retriedWhole reports whether go-redis's ClusterClient retries a whole
// pipeline whose first command answers the error msg (its shouldRetry).
func retriedWhole(msg string) bool {
	for _, code := range [...]string{"CLUSTERDOWN ", "TRYAGAIN ", "LOADING ", "MASTERDOWN "} {
		if strings.HasPrefix(msg, code) {
			return true
		}
	}
	return false
}

// refusesOn reports whether msg, the reply to a pipeline's first command
// that could not reach its node, refuses the rest.
func refusesOn(msg string) bool { return msg == resp.ErrClusterDownSlot }

// refusedBatchEnd notes, once the replies to the commands read so far are
// ready and before they are written, whether more of the client's bytes
// are already there: then the next read goes on with the same pipeline. A
// batch end that handled no command (a read that brought part of one)
// changes nothing. The socket is asked only while the pipeline is refused
// or some node is down, where the answer may matter (a system call per
// batch, spent for nothing otherwise).
func (c *client) refusedBatchEnd() {
	if c.readCmds == 0 {
		return
	}
	more := c.rd.Buffered() > 0
	if !more && (c.refused.on || c.srv.route.someDown()) {
		more = rawio.Unread(c.nc)
	}
	c.refused.more = more
}

// refusedNextRead ends the refusal after a read, unless the bytes read
// continue the refused pipeline while a node is still down, and tells
// whether the read starts a pipeline (readHead).
func (c *client) refusedNextRead() {
	p := &c.refused
	if p.on && (!p.more || !c.srv.route.someDown()) {
		p.on = false
	}
	c.readHead = !p.more
	c.readCmds = 0
}
