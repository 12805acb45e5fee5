package valkeystart

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"valkey.io/operator/internal/clusternodes"
)

// AOFWatchPeriod is how often the wrapper looks at its server's AOF while it runs (a local
// INFO persistence: microseconds of the server's time).
const AOFWatchPeriod = 250 * time.Millisecond

// aofErrorLines are what the server logs on an AOF write or sync error, or once one is over:
// an error shorter than AOFWatchPeriod is seen in the log.
var aofErrorLines = []string{"AOF write error looks solved", "writing to the AOF file", "fsync the AOF", "fsync error"}

// aofLog passes the server's output on and raises damaged when a line tells of an AOF
// write or sync error.
type aofLog struct {
	out     io.Writer
	damaged *atomic.Bool
	partial []byte
}

func (l *aofLog) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		for _, s := range aofErrorLines {
			if strings.Contains(line, s) {
				l.damaged.Store(true)
			}
		}
	}
	if len(l.partial) > 4096 {
		l.partial = l.partial[:0] // a line that long tells nothing of the AOF
	}
	return l.out.Write(p)
}

// watchAOF runs while the server does. When the server reports that its AOF failed to be
// written or synced (aof_last_write_status:err: a full disk, an I/O error), the file may hold
// a hole where a write that reached the page cache never reached the disk (seen on a volume
// filled to 100 %: a run of zero bytes between two commands), while the server goes on
// serving from memory and appending after it. Such a file stops the next start ("Bad file
// format reading the append only file"). So once the status is ok again, it asks for
// BGREWRITEAOF: the rewrite writes the data set anew from memory and the damaged file goes.
// A rewrite that fails (the disk full again) is asked again after the next error clears.
func (w *Wrapper) watchAOF(ctx context.Context, done <-chan struct{}) {
	tick := time.NewTicker(AOFWatchPeriod)
	defer tick.Stop()
	var s *server
	defer func() {
		if s != nil {
			s.close()
		}
	}()
	damaged, rewrites := false, int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-tick.C:
		}
		if s == nil {
			var err error
			if s, err = dial(w.Addr, w.User, w.Password, w.DialTimeout, w.TLS); err != nil {
				s = nil
				continue
			}
		}
		out, err := s.str(ctx, "INFO", "persistence")
		if err != nil {
			w.persistence.Store(nil)
			s.close()
			s = nil
			continue
		}
		w.observePersistence(clusternodes.ParseInfo(out))
		if w.aofDamaged.Swap(false) && !damaged {
			w.logf("the server logged an AOF write or sync error: the AOF will be rewritten from memory once it can write again")
			damaged = true
		}
		damaged, rewrites = w.lookAtAOF(ctx, s, clusternodes.ParseInfo(out), damaged, rewrites)
	}
}

// observePersistence records the server's persistence state for the metrics and logs when
// its saves start or stop failing.
func (w *Wrapper) observePersistence(info map[string]string) {
	now := persistenceOf(info)
	before := w.persistence.Swap(now)
	was := ""
	if before != nil {
		was = before.summary()
	}
	switch is := now.summary(); {
	case is != "" && is != was:
		w.logf("the server's saves fail (%s): it refuses writes with MISCONF until it can save again (a full volume?)", is)
	case is == "" && was != "":
		w.logf("the server saves again")
	}
}

// lookAtAOF is one look: it returns whether the AOF is still to be rewritten and the server's
// rewrite count when one was asked for (-1 when none is pending).
func (w *Wrapper) lookAtAOF(ctx context.Context, s *server, info map[string]string, damaged bool, asked int64) (bool, int64) {
	if info["aof_enabled"] != "1" {
		return false, -1
	}
	count, _ := strconv.ParseInt(info["aof_rewrites"], 10, 64)
	switch {
	case info["aof_last_write_status"] == "err":
		if !damaged {
			w.logf("the server could not write or sync its AOF (a full disk?): it will be rewritten from memory once it can write again")
		}
		return true, -1
	case asked >= 0 && count > asked && info["aof_rewrite_in_progress"] == "0":
		if info["aof_last_bgrewrite_status"] == "ok" {
			w.logf("the AOF was rewritten from memory after a write error")
			return false, -1
		}
		return true, -1 // failed: asked again below at the next look
	case damaged && asked < 0:
		if _, err := s.str(ctx, "BGREWRITEAOF"); err != nil {
			w.logf("BGREWRITEAOF after an AOF write error: %v (asked again in %s)", err, AOFWatchPeriod)
			return true, -1
		}
		w.logf("the AOF can be written again: rewriting it from memory (BGREWRITEAOF), so that no part of it lost in the error stops the next start")
		return true, count
	}
	return damaged, asked
}
