package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// timeoutBody is the answer to a request still being handled when its
// handler timeout passed.
const timeoutBody = `{"error":"the request took too long","code":"timeout"}`

// withDeadline runs h with the request's context ending after timeout.
// Every I/O path of the engine takes that context, so a handler stopped
// by it answers 503 "timeout" itself (writeError). A handler still running
// at the deadline (waiting on something that does not take the context)
// is answered 503 "timeout" then, from another goroutine, and what it
// writes afterwards is dropped with http.ErrHandlerTimeout, as
// http.TimeoutHandler does. Unlike it, h runs on the connection's
// goroutine, whose stack has grown to fit it already, and writes straight
// through: a goroutine (and a hand-over between threads) is started only
// at the deadline, not for every request.
func withDeadline(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		dw := &deadlineWriter{w: w, header: make(http.Header)}
		stop := context.AfterFunc(ctx, func() { dw.expire(ctx.Err()) })
		defer func() {
			// Before cancel (deferred first, run last): an expire not
			// started by now never starts. One already started either
			// answered before this (done waits for it) or will find the
			// turn over and write nothing.
			stop()
			if p := recover(); p != nil {
				// net/http recovers a handler's panic and closes the
				// connection: nothing may write to w any more.
				dw.abandon()
				panic(p)
			}
			dw.done()
		}()
		h.ServeHTTP(dw, r.WithContext(ctx))
	})
}

// deadlineWriter passes a handler's answer through until the deadline
// answers for it. The handler has a header of its own, copied to w's when
// it writes the status, so that expire may set w's meanwhile.
type deadlineWriter struct {
	w      http.ResponseWriter
	header http.Header

	mu       sync.Mutex
	wrote    bool // the status went out, the handler's or the timeout's
	expired  bool // the timeout answered; the handler's writes are dropped
	finished bool // the handler returned: w is no longer this request's
}

func (d *deadlineWriter) Header() http.Header { return d.header }

func (d *deadlineWriter) WriteHeader(code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writeHeader(code)
}

// writeHeader sends the handler's status and header; d.mu is held.
func (d *deadlineWriter) writeHeader(code int) {
	if d.expired || d.wrote || d.finished {
		return
	}
	d.wrote = true
	dst := d.w.Header()
	for k, v := range d.header {
		dst[k] = v
	}
	d.w.WriteHeader(code)
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired || d.finished {
		return 0, http.ErrHandlerTimeout
	}
	d.writeHeader(http.StatusOK)
	return d.w.Write(b)
}

// expire answers 503 "timeout" when the deadline passed (err) unless the
// handler has begun its answer; from then on the handler's writes are
// dropped. A client gone (the request's context cancelled) is not
// answered.
func (d *deadlineWriter) expire(err error) {
	if !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wrote || d.finished {
		return // the handler's answer is on its way, or done
	}
	d.wrote, d.expired = true, true
	h := d.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(timeoutBody)))
	d.w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = d.w.Write([]byte(timeoutBody))
	if f, ok := d.w.(http.Flusher); ok {
		f.Flush() // the client has its answer now, not when the handler returns
	}
}

// abandon ends the turn of a handler that panicked, writing nothing.
func (d *deadlineWriter) abandon() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finished = true
}

// done ends the handler's turn: a handler that wrote nothing gets an empty
// 200 with its header, as net/http would give it.
func (d *deadlineWriter) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writeHeader(http.StatusOK)
	d.finished = true
}
