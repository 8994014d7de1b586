package lease

import (
	"strconv"
	"time"
)

// Msg is a log line of an algorithm, kept as a number and two arguments
// so that the simulator records it without formatting; the trace printer
// formats it only when asked ([Msg.Format]). Each algorithm declares its
// own lines, in a block of numbers of its own: the seed program's (the
// post's, which the others reuse where they say the same thing) in
// seed.go, the reference's in reference.go, the flock election's in
// flock.go.
type Msg uint8

// The blocks of message numbers.
const (
	seedBase  Msg = 0
	refBase   Msg = 64
	flockBase Msg = 128
)

// MsgRaw is no message of leaselab's: a line another program printed on
// its standard output, kept as it was (torture -exec records it with the
// line as the event's text).
const MsgRaw Msg = 255

// Arg kinds of a message's arguments.
const (
	argNone = iota
	argPID
	argTime
	argNum
	// argHolder is a record's holder: its PID, or "an unknown holder" for
	// Unknown (a record no leaselab wrote, or one it cannot read).
	argHolder
)

// msgText is a line's text, with % for each argument, and the arguments'
// kinds.
type msgText struct {
	text   string
	a, b   uint8
	stderr bool
}

func (m Msg) lookup() (msgText, bool) {
	switch {
	case m >= flockBase && m < flockEnd:
		return flockMsgs[m-flockBase], true
	case m >= refBase && m < refEnd:
		return refMsgs[m-refBase], true
	case m < seedEnd:
		return seedMsgs[m-seedBase], true
	}
	return msgText{}, false
}

// Stderr reports whether the line goes to standard error (the program's
// println) rather than standard output.
func (m Msg) Stderr() bool {
	d, ok := m.lookup()
	return ok && d.stderr
}

// Format renders the line as the post shows it: Unix seconds as HH:MM:SS
// in loc. (The program prints RFC 3339; the post shortened the times to
// HH:MM:SS and so do we.)
func (m Msg) Format(a, b int64, loc *time.Location) string {
	d, ok := m.lookup()
	if !ok {
		return "Msg(" + strconv.Itoa(int(m)) + ")"
	}
	out := make([]byte, 0, len(d.text)+16)
	args := [2]struct {
		kind uint8
		v    int64
	}{{d.a, a}, {d.b, b}}
	i := 0
	for j := 0; j < len(d.text); j++ {
		if d.text[j] != '%' {
			out = append(out, d.text[j])
			continue
		}
		switch arg := args[i]; arg.kind {
		case argHolder:
			if arg.v == Unknown {
				out = append(out, "an unknown holder"...)
				break
			}
			out = strconv.AppendInt(out, arg.v, 10)
		case argPID, argNum:
			out = strconv.AppendInt(out, arg.v, 10)
		case argTime:
			out = time.Unix(arg.v, 0).In(loc).AppendFormat(out, "15:04:05")
		}
		i++
	}
	return string(out)
}
