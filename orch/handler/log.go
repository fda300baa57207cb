package handler

import (
	"bytes"
	"strconv"
	"sync"
	"time"
)

// Line is one line a script printed, with when it was read and on which
// stream.
type Line struct {
	At     time.Time
	Stream byte // 'o' stdout, 'e' stderr, '!' a note from solar (dropped lines, a previous attempt killed)
	Text   string
}

// Log caps: an attempt keeps the first logHead and the last logTail bytes
// of what it printed (1 MiB in all) and counts what it dropped between;
// a line longer than lineMax is cut into pieces.
const (
	logHead = 512 << 10
	logTail = 512 << 10
	lineMax = 16 << 10
)

// lineLog collects an attempt's stdout and stderr as timestamped lines,
// interleaved in the order they were read, within the caps. It is written
// by whatever reads the command's two streams: one goroutine for a local
// script, the SSH session's for a remote one.
type lineLog struct {
	mu        sync.Mutex
	now       func() time.Time
	partial   [2][]byte
	head      []Line
	headBytes int
	tail      []Line // oldest first, from tail[tailStart]
	tailStart int
	tailBytes int
	dropped   int // lines dropped between head and tail
	droppedB  int
	live      func(Line) // told of every complete line, unmasked
}

func newLineLog(live func(Line)) *lineLog {
	return &lineLog{now: time.Now, live: live}
}

// stream returns the writer of one stream ('o' or 'e').
func (l *lineLog) stream(s byte) *logStream { return &logStream{l: l, s: s} }

type logStream struct {
	l *lineLog
	s byte
}

func (w *logStream) Write(p []byte) (int, error) {
	w.l.write(w.s, p)
	return len(p), nil
}

func (l *lineLog) write(s byte, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	if s == 'e' {
		i = 1
	}
	buf := append(l.partial[i], p...)
	for {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			break
		}
		l.add(s, buf[:nl])
		buf = buf[nl+1:]
	}
	for len(buf) >= lineMax {
		l.add(s, buf[:lineMax])
		buf = buf[lineMax:]
	}
	l.partial[i] = append(l.partial[i][:0], buf...)
}

// note adds a line of solar's own ('!') to the log.
func (l *lineLog) note(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add('!', []byte(text))
}

// add keeps one line (with mu held).
func (l *lineLog) add(s byte, text []byte) {
	line := Line{At: l.now(), Stream: s, Text: string(bytes.TrimSuffix(text, []byte("\r")))}
	if l.live != nil {
		l.live(line)
	}
	n := len(line.Text) + 1
	if l.tail == nil && l.headBytes+n <= logHead {
		l.head = append(l.head, line)
		l.headBytes += n
		return
	}
	l.tail = append(l.tail, line)
	l.tailBytes += n
	for l.tailBytes > logTail && l.tailStart < len(l.tail)-1 {
		old := l.tail[l.tailStart]
		l.tail[l.tailStart] = Line{}
		l.tailStart++
		l.tailBytes -= len(old.Text) + 1
		l.dropped++
		l.droppedB += len(old.Text) + 1
	}
	if l.tailStart > len(l.tail)/2 && l.tailStart > 1024 {
		l.tail = append(l.tail[:0:0], l.tail[l.tailStart:]...)
		l.tailStart = 0
	}
}

// lines ends the partial lines and returns what was kept, with a note
// where lines were dropped, each line's text passed through mask.
func (l *lineLog) lines(mask func(string) string) []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range []byte{'o', 'e'} {
		if len(l.partial[i]) > 0 {
			l.add(s, l.partial[i])
			l.partial[i] = nil
		}
	}
	out := make([]Line, 0, len(l.head)+len(l.tail)-l.tailStart+1)
	for _, ln := range l.head {
		ln.Text = mask(ln.Text)
		out = append(out, ln)
	}
	if l.dropped > 0 {
		out = append(out, Line{At: l.tail[l.tailStart].At, Stream: '!',
			Text: droppedNote(l.dropped, l.droppedB)})
	}
	for _, ln := range l.tail[l.tailStart:] {
		ln.Text = mask(ln.Text)
		out = append(out, ln)
	}
	return out
}

func droppedNote(lines, bytes int) string {
	return "… " + strconv.Itoa(lines) + " lines (" + strconv.Itoa(bytes) + " bytes) dropped: an attempt keeps the first 512 KiB and the last 512 KiB …"
}
