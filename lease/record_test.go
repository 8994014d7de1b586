package lease_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// leaseContent is the post's struct, which encoding/json marshals and
// unmarshals; AppendJSON and ParseRecord must agree with it exactly.
type leaseContent struct {
	ProcessId  int   `json:"processId"`
	LeaseUntil int64 `json:"leaseUntil"`
}

func TestAppendJSONMatchesMarshal(t *testing.T) {
	vals := []int64{0, 1, -1, 9, 10, 99, 60217, -60217, 1715430000, -1715430000,
		999999999999999999, -999999999999999999, 1000000000000000000,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		math.MaxInt32, math.MinInt32}
	for _, h := range vals {
		for _, u := range vals {
			want, err := json.Marshal(leaseContent{ProcessId: int(h), LeaseUntil: u})
			if err != nil {
				t.Fatal(err)
			}
			got := lease.Record{Holder: h, Until: u}.AppendJSON(nil)
			if string(got) != string(want) {
				t.Errorf("Record{%d, %d}.AppendJSON = %s, want %s", h, u, got, want)
			}
			// Appending keeps what is already there.
			got = lease.Record{Holder: h, Until: u}.AppendJSON([]byte("x"))
			if string(got) != "x"+string(want) {
				t.Errorf("AppendJSON onto \"x\" = %s, want x%s", got, want)
			}
		}
	}
}

// refParse is the post's getLeaseContent decoding. The struct is anonymous,
// as ParseRecord's is, so that type errors name the field the same way.
func refParse(b []byte) (lease.Record, error) {
	var c struct {
		ProcessId  int   `json:"processId"`
		LeaseUntil int64 `json:"leaseUntil"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return lease.Record{}, err
	}
	return lease.Record{Holder: int64(c.ProcessId), Until: c.LeaseUntil}, nil
}

// checkParse fails t unless ParseRecord(b) and refParse(b) agree: the same
// record when both succeed, the same error text when both fail.
func checkParse(t *testing.T, b []byte) (lease.Record, error) {
	t.Helper()
	got, gotErr := lease.ParseRecord(b)
	want, wantErr := refParse(b)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Errorf("ParseRecord(%q) = %v, %v; json.Unmarshal gives %v, %v", b, got, gotErr, want, wantErr)
	case gotErr != nil:
		if gotErr.Error() != wantErr.Error() {
			t.Errorf("ParseRecord(%q) error = %q, json.Unmarshal error = %q", b, gotErr, wantErr)
		}
		if got != (lease.Record{}) {
			t.Errorf("ParseRecord(%q) = %v with error %v, want the zero Record", b, got, gotErr)
		}
	case got != want:
		t.Errorf("ParseRecord(%q) = %v, json.Unmarshal gives %v", b, got, want)
	}
	return got, gotErr
}

var parseCases = []struct {
	in      string
	wantErr bool
	want    lease.Record
}{
	{in: `{"processId":60217,"leaseUntil":1715430000}`, want: lease.Record{Holder: 60217, Until: 1715430000}},
	{in: `{"processId":-5,"leaseUntil":-7}`, want: lease.Record{Holder: -5, Until: -7}},
	{in: `{"processId":0,"leaseUntil":0}`},
	{in: `{"processId":-0,"leaseUntil":-0}`},
	{in: `{"processId": 60217, "leaseUntil": 1715430000}`, want: lease.Record{Holder: 60217, Until: 1715430000}},
	{in: " \n\t{\"processId\":1,\"leaseUntil\":2}\n", want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"processId":1,"leaseUntil":2} `, want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"leaseUntil":2,"processId":1}`, want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"processId":1,"leaseUntil":2,"extra":[1,{"a":null}]}`, want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"extra":"x","processId":1,"leaseUntil":2}`, want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"PROCESSID":1,"LeaseUntil":2}`, want: lease.Record{Holder: 1, Until: 2}},
	{in: `{"processid":3,"leaseuntil":4}`, want: lease.Record{Holder: 3, Until: 4}},
	{in: `{"processId":1}`, want: lease.Record{Holder: 1}},
	{in: `{}`},
	{in: ``, wantErr: true}, // the post's empty file (its error is made once)
	{in: `{"processId":1,"processId":2,"leaseUntil":3}`, want: lease.Record{Holder: 2, Until: 3}},
	{in: `null`},
	{in: `{"processId":null,"leaseUntil":null}`},
	{in: ``, wantErr: true},
	{in: ` `, wantErr: true},
	{in: `{`, wantErr: true},
	{in: `{"processId":1`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":2`, wantErr: true},
	{in: `{"processId":01,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":02}`, wantErr: true},
	{in: `{"processId":-01,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1.0,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":2.5}`, wantErr: true},
	{in: `{"processId":1e3,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":1E3}`, wantErr: true},
	{in: `{"processId":-,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":+1,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":999999999999999999}`, want: lease.Record{Holder: 1, Until: 999999999999999999}},
	{in: `{"processId":123456789012345678,"leaseUntil":1234567890123456789}`, want: lease.Record{Holder: 123456789012345678, Until: 1234567890123456789}},
	{in: `{"processId":0,"leaseUntil":0}`, want: lease.Record{}},
	{in: `{"processId":60217,"leaseUntil":1760476487.5}`, wantErr: true},
	{in: `{"processId":60217e1,"leaseUntil":1760476487}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":-999999999999999999}`, want: lease.Record{Holder: 1, Until: -999999999999999999}},
	{in: `{"processId":1,"leaseUntil":9223372036854775807}`, want: lease.Record{Holder: 1, Until: math.MaxInt64}},
	{in: `{"processId":1,"leaseUntil":-9223372036854775808}`, want: lease.Record{Holder: 1, Until: math.MinInt64}},
	{in: `{"processId":9223372036854775807,"leaseUntil":1}`, want: lease.Record{Holder: math.MaxInt64, Until: 1}},
	{in: `{"processId":1,"leaseUntil":9223372036854775808}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":9999999999999999999}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":10000000000000000000}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":-9223372036854775809}`, wantErr: true},
	{in: `{"processId":"1","leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":"2"}`, wantErr: true},
	{in: `{"processId":true,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":2}x`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":2}}`, wantErr: true},
	{in: `{"processId":1,"leaseUntil":2}{}`, wantErr: true},
	{in: `{"processId":1,,"leaseUntil":2}`, wantErr: true},
	{in: `{"processId":1;"leaseUntil":2}`, wantErr: true},
	{in: `[1,2]`, wantErr: true},
	{in: `"x"`, wantErr: true},
	{in: "{\"processId\":1,\"leaseUntil\":2}\x00", wantErr: true},
	{in: "\x00\x00\x00", wantErr: true},
}

func TestParseRecordMatchesUnmarshal(t *testing.T) {
	for _, tc := range parseCases {
		got, err := checkParse(t, []byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseRecord(%q) error = %v, want error: %v", tc.in, err, tc.wantErr)
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseRecord(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseRecordRoundTrip(t *testing.T) {
	for _, r := range []lease.Record{{}, {Holder: 1, Until: 2}, {Holder: -3, Until: -4},
		{Holder: math.MaxInt64, Until: math.MinInt64}, {Holder: math.MinInt64, Until: math.MaxInt64},
		{Holder: 123456789012345678, Until: -123456789012345678}} {
		b := r.AppendJSON(nil)
		got, err := checkParse(t, b)
		if err != nil || got != r {
			t.Errorf("ParseRecord(%s) = %+v, %v; want %+v, nil", b, got, err, r)
		}
	}
}

// TestParseRecordFastPath checks that the canonical form does not go
// through encoding/json, which allocates; and that the test can tell, by
// checking that a non-canonical form does allocate.
func TestParseRecordFastPath(t *testing.T) {
	canonical := []byte(`{"processId":60217,"leaseUntil":1715430000}`)
	negative := []byte(`{"processId":-1,"leaseUntil":-999999999999999999}`)
	long := []byte(`{"processId":1234567890123456789,"leaseUntil":-9223372036854775808}`)
	for _, b := range [][]byte{canonical, negative, long} {
		var got lease.Record
		allocs := testing.AllocsPerRun(100, func() { got, _ = lease.ParseRecord(b) })
		if allocs != 0 {
			t.Errorf("ParseRecord(%s) allocates %v times per run; want 0 (the fast path)", b, allocs)
		}
		if want, _ := refParse(b); got != want {
			t.Errorf("ParseRecord(%s) = %+v, want %+v", b, got, want)
		}
	}
	for _, s := range []string{`{"processId": 60217,"leaseUntil":1715430000}`,
		`{"processId":60217,"leaseUntil":12345678901234567890}`} {
		b := []byte(s)
		if allocs := testing.AllocsPerRun(10, func() { lease.ParseRecord(b) }); allocs == 0 {
			t.Errorf("ParseRecord(%s) does not allocate: encoding/json should have decoded it", s)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	f.Add(lease.Record{Holder: math.MaxInt64, Until: math.MinInt64}.AppendJSON(nil))
	f.Add([]byte(`{"processId":` + strings.Repeat("9", 18) + `,"leaseUntil":-` + strings.Repeat("9", 19) + `}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParse(t, b)
	})
}

// A stated lease is the writer's rounded up to a whole millisecond, none
// for a lease that is not positive; a stated one is read back only from 1
// ms to a day.
func TestStatedTTL(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ms int64
	}{
		{0, 0}, {-time.Second, 0}, {-time.Nanosecond, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1},
		{time.Millisecond + 1, 2}, {27 * time.Second, 27000}, {27*time.Second + time.Microsecond, 27001},
		{math.MaxInt64, math.MaxInt64/int64(time.Millisecond) + 1},
	} {
		if got := lease.TTLMillis(c.d); got != c.ms {
			t.Errorf("TTLMillis(%v) = %d, want %d", c.d, got, c.ms)
		}
		if got := lease.StatedTTL(c.d); c.ms <= math.MaxInt64/int64(time.Millisecond) && got != time.Duration(c.ms)*time.Millisecond {
			t.Errorf("StatedTTL(%v) = %v, want %d ms", c.d, got, c.ms)
		}
	}
	for ms, ok := range map[int64]bool{1: true, 9000: true, lease.MaxTTLMillis: true, 0: false, -1: false, lease.MaxTTLMillis + 1: false, math.MinInt64: false} {
		d, err := lease.TTLFromMillis(ms)
		if (err == nil) != ok || ok && d != time.Duration(ms)*time.Millisecond {
			t.Errorf("TTLFromMillis(%d) = %v, %v; want ok %v", ms, d, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "not one a writer states") {
			t.Errorf("TTLFromMillis(%d): error %q does not say why", ms, err)
		}
	}
}

// The post's empty file is read at every poll of a wedged run: its parse
// error is made once, not by encoding/json at each read.
func TestParseEmptyRecordAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = lease.ParseRecord(nil) }); n != 0 {
		t.Errorf("ParseRecord of an empty file allocates %.0f times", n)
	}
}
