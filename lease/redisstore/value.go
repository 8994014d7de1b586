package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/redis/go-redis/v9"
)

// version15 is a Lua pattern of a version the scripts count: a whole
// number in decimal, no leading zero, at most 15 digits (Lua's numbers
// are doubles, exact to 2^53).
const version15 = "[1-9]%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?"

// maxVersion15 is the highest version version15 matches. Both scripts
// refuse to count past it (ErrNoVersionLeft): the 16-digit version an
// INCR made of it was no version15, so the next write started the counter
// again from 0, below the leader's epoch. Its records of versions 1, 2, ...
// and epoch 10^15 were no lease records to any reader, and the next
// leader's epoch was a small number again, which a fenced resource that
// remembers the highest epoch it took refuses for good (a deployment
// probe, 2026-12-07: a counter set to 999999999999997, epochs
// 999999999999998 then 1).
const maxVersion15 = "999999999999999"

// lifeLua is the scripts' incarnation of the server's data
// (lease.Record.Incarnation), as a Lua expression of v, the version the
// write made: the value of the life key, their last KEYS, which a write
// that finds it absent sets to the fresh one its caller drew, their last
// ARGV, with no TTL, and which nothing else deletes, so that only a loss
// of the server's data (a restart without it, FLUSHALL) changes it.
// Versions cannot show every loss: the counter starts again from 1 and,
// after a few writes, passes a version a process saw before the loss, and
// a create over a record that expired since names it (Vanished) but not
// one a release ended (a scripted run: a newcomer after the loss led and
// released, and a watcher paused across the loss created above the
// version it had seen, and led beside that version's holder). A write of
// version 1 begins another life whatever the life key holds: the versions
// count again from 1, and the key is a key of its own, which a loss of
// some of the lease's keys and not others may have left (an eviction
// under an allkeys-* policy, which picks keys one by one; an operator's
// DEL of the others), and with it the hole (a review: the counter and the
// marks deleted, the life key left, a create above the version read
// before named the same life). ("" for a key of another type, an
// operator's: no life known, 0.)
const lifeLua = `(function(v)
  if v == 1 then redis.call('DEL', KEYS[#KEYS]) end
  local l = redis.pcall('GET', KEYS[#KEYS])
  if l == false then
    redis.call('SET', KEYS[#KEYS], ARGV[#ARGV])
    return ARGV[#ARGV]
  end
  if type(l) == 'string' then return l end
  return ''
end)(v)`

// The scripts. KEYS[1] is the record, KEYS[2] the version counter; the
// lease key, written by every write with no TTL, keeps "VERSION LEASE_MS
// NONCE" of the last record that stated a lease, so that a record the
// server dropped is known for how long it may still be held, and which
// record it was (versions repeat after a loss of the server's data):
// Read's and Create's answers, lease.VanishedError's TTL and Nonce,
// lease.Record's VanishedTTL and VanishedNonce. (Nonces go back as
// strings: Lua's numbers are doubles.)
// Versions are formatted with %d: Lua's own number formatting turns large
// integers into exponents. The writer's lease (its LeaseDuration in whole
// ms, as lease.TTLMillis states it) and the write's nonce (lease.NewNonce)
// come as one string, "" for none, and end the value: "HOLDER EPOCH
// VERSION LEASE_MS NONCE".
var (
	// KEYS[3] the released version's key, KEYS[4] the lease key, KEYS[5]
	// the life key. ARGV[1] holder, ARGV[2] TTL in ms, ARGV[3] the
	// writer's lease in ms and the nonce (or ""), ARGV[4] the channel to
	// publish the change on, ARGV[5] a fresh incarnation. Returns {the new
	// version, the version of the record it replaced if that went without
	// a release (else 0), the lease that record stated in ms (0: not
	// known), its nonce ("": not known), the incarnation}; {0, 0, 0} if a record
	// exists, {-1, 0, 0} if the key holds another type, {-2, 0, 0} if the
	// counter is at maxVersion15. The new record
	// states the longer of its writer's lease and the lease the record it
	// replaced stated, if that went without a release, and lives that
	// much longer (lease.Record.VanishedTTL: its holder may lead that
	// long, and a reader of the new record, its creator too when the
	// answer is lost, waits what the record states). (The counter is
	// the last record's version: a release does not move it, and stores
	// it as the released version. The marks are read with pcall: a key
	// of another type at either, an operator's, is a dropped record of no
	// known lease, not an error of every create for ever, as a review
	// found a plain GET would make it.)
	createScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' then
  if t ~= 'string' then return {-1, 0, 0} end
  return {0, 0, 0}
end
local c = redis.pcall('GET', KEYS[2])
local counted = type(c) == 'string' and (c == '0' or string.match(c, '^` + version15 + `$'))
-- A counter no leaselab wrote (negative, not a whole number, over 15
-- digits, where Lua's doubles soon stop counting, a key of another
-- type), or one below a version the marks name (an operator's SET of a
-- lower number: epochs went back), is started again above every version
-- the marks name (the released version, the lease key's), so that a
-- stale released mark never names a new record, which a drop would then
-- make read as released.
local base = 0
local rv = redis.pcall('GET', KEYS[3])
if type(rv) == 'string' and string.match(rv, '^` + version15 + `$') then base = math.max(base, tonumber(rv)) end
local l = redis.pcall('GET', KEYS[4])
if type(l) == 'string' then
  local lv = string.match(l, '^(` + version15 + `) ')
  if lv then base = math.max(base, tonumber(lv)) end
end
-- A counter missing (an operator's DEL of it alone: INCR made epoch 1
-- again, a deployment probe) is started again so too when a mark names
-- a version; with no mark either, the store lost its data, as before.
-- (The last record the marks name went without a release unless the
-- released mark names it: said as any other's, below.)
if not counted and (c or base > 0) or counted and tonumber(c) < base then
  c = string.format('%d', base)
  redis.call('SET', KEYS[2], c)
end
if c == '` + maxVersion15 + `' then return {-2, 0, 0} end
local gone, goneMS, goneNonce = 0, 0, ''
if c and c ~= '0' and redis.pcall('GET', KEYS[3]) ~= c then
  gone = tonumber(c)
  local l = redis.pcall('GET', KEYS[4])
  if type(l) == 'string' then
    local lv, lms, ln = string.match(l, '^(%d+) (%d+) ?(%d*)$')
    if lv == c then goneMS, goneNonce = tonumber(lms), ln end
  end
end
local tail, px = ARGV[3], tonumber(ARGV[2])
if tail ~= '' and goneMS <= 86400000 then
  local ms, rest = string.match(tail, '^(%d+)(.*)$')
  if ms and goneMS > tonumber(ms) then
    px = px + goneMS - tonumber(ms)
    tail = string.format('%d', goneMS) .. rest
  end
end
local v = redis.call('INCR', KEYS[2])
local val = ARGV[1] .. ' ' .. string.format('%d %d', v, v)
if tail ~= '' then val = val .. ' ' .. tail end
if not redis.call('SET', KEYS[1], val, 'NX', 'PX', string.format('%d', px)) then return {0, 0, 0} end
if tail ~= '' then redis.call('SET', KEYS[4], string.format('%d ', v) .. tail) else redis.call('DEL', KEYS[4]) end
redis.pcall('PUBLISH', ARGV[4], string.format('%d', v))
return {v, gone, goneMS, goneNonce, ` + lifeLua + `}`)
	// KEYS[3] the lease key, KEYS[4] the life key. ARGV[1] the expected
	// value, ARGV[2] the holder to write, ARGV[3] its epoch ("" for an
	// acquisition: the new version), ARGV[4] TTL in ms, ARGV[5] the
	// writer's lease in ms and the nonce (or ""), ARGV[6] the channel,
	// ARGV[7] a fresh incarnation.
	// Returns {the new version, the incarnation}, or 0 if the value is not the expected one
	// (or there is none), -2 if the counter is at maxVersion15. A counter no leaselab wrote (negative, not a
	// whole number in decimal, over 15 digits, which Lua's doubles soon
	// cannot count, a key of another type) is started again, by both
	// scripts, from the highest version leaselab wrote that the keys
	// still name (the record replaced, the lease key, the released mark),
	// not from 0: from 0, a renewal of epoch E wrote versions below E,
	// which no reader parses, and a stale released mark named a new
	// record, which a drop then made read as released (a review,
	// 2026-12-07). An operator's negative counter made records of
	// negative versions that no reader could parse, read as one
	// unchanging record of no known holder while its leader renewed, and
	// taken over beside it (a probe, 2026-12-07: two commands at once, 5
	// of 5). A counter missing while the record is there (an operator's
	// DEL of it) is started again so too: INCR made it 1, under a leader
	// of epoch 31 a renewal of version 1 that no reader parsed, and the
	// next leader's epoch was 18 (a deployment probe, 2026-12-07). So is
	// a counter below a version the keys name (an operator's SET of a
	// lower number): under a leader of epoch 31 a counter set to 3 made
	// its renewal version 4, foreign to every reader, and the next epochs
	// 5 and 4 (a review, 2026-12-07: TestCounterSetLower).
	writeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local c = redis.pcall('GET', KEYS[2])
local counted = type(c) == 'string' and (c == '0' or string.match(c, '^` + version15 + `$'))
-- (A counter gone while its record is here, an operator's DEL, too; and
-- one below the record's version, an operator's SET of a lower number,
-- which made a renewal's version fall below its epoch.) Started again
-- from the version of the record replaced, when leaselab wrote it: a
-- renewal's epoch stays at or below its version, and the marks
-- (released, lease key) below the versions to come.
local base = 0
local ep, ev = string.match(ARGV[1], '^%d+ ([1-9]%d*) ([1-9]%d*)$')
if not ev then ep, ev = string.match(ARGV[1], '^%d+ ([1-9]%d*) ([1-9]%d*) ') end
if ev and #ev <= 15 and #ep <= #ev and tonumber(ep) <= tonumber(ev) then base = tonumber(ev) end
local l = redis.pcall('GET', KEYS[3])
if type(l) == 'string' then
  local lv = string.match(l, '^(` + version15 + `) ')
  if lv then base = math.max(base, tonumber(lv)) end
end
if not counted or tonumber(c) < base then
  c = string.format('%d', base)
  redis.call('SET', KEYS[2], c)
end
if c == '` + maxVersion15 + `' then return -2 end
local v = redis.call('INCR', KEYS[2])
local e = ARGV[3]
if e == '' then e = string.format('%d', v) end
local val = ARGV[2] .. ' ' .. e .. ' ' .. string.format('%d', v)
if ARGV[5] ~= '' then val = val .. ' ' .. ARGV[5] end
redis.call('SET', KEYS[1], val, 'PX', ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[3], string.format('%d ', v) .. ARGV[5]) else redis.call('DEL', KEYS[3]) end
redis.pcall('PUBLISH', ARGV[6], string.format('%d', v))
return {v, ` + lifeLua + `}`)
	// KEYS[2] the released version's key. ARGV[1] the expected value,
	// ARGV[2] the channel, ARGV[3] its version. Returns 1 if it was
	// deleted, 0 if the value is not the expected one.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[3])
redis.pcall('PUBLISH', ARGV[2], '0')
return 1`)
)

// encode is the record's value: "HOLDER EPOCH VERSION LEASE_MS NONCE";
// "HOLDER EPOCH VERSION LEASE_MS" for a record with no nonce, and "HOLDER
// EPOCH VERSION" for one that states no lease (records earlier leaselabs
// wrote).
func encode(r lease.Record) string {
	v := strconv.FormatInt(r.Holder, 10) + " " + strconv.FormatInt(r.Epoch, 10) + " " + strconv.FormatInt(r.Version, 10)
	if t := tail(r.TTL, r.Nonce); t != "" {
		v += " " + t
	}
	return v
}

// tail is the end of a value, after its version: the writer's lease in
// whole ms, then the nonce when there is one; "" for a record that
// states no lease.
func tail(ttl time.Duration, nonce uint64) string {
	ms := lease.TTLMillis(ttl)
	switch {
	case ms <= 0:
		return ""
	case nonce == 0:
		return strconv.FormatInt(ms, 10)
	}
	return strconv.FormatInt(ms, 10) + " " + strconv.FormatUint(nonce, 10)
}

// decode parses a value that encode wrote, and nothing else: three
// fields (a record from a leaselab that kept no lease: TTL 0), four (one
// that kept no nonce) or five.
func decode(v string) (lease.Record, error) {
	f := strings.Split(v, " ")
	if len(f) < 3 || len(f) > 5 {
		return lease.Record{}, fmt.Errorf("%d fields, not HOLDER EPOCH VERSION [LEASE_MS [NONCE]]", len(f))
	}
	var n [5]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || x < 0 || strconv.FormatInt(x, 10) != s {
			return lease.Record{}, fmt.Errorf("field %d, %.24q, is not a decimal number", i+1, s)
		}
		n[i] = x
	}
	if n[1] <= 0 || n[2] < n[1] {
		return lease.Record{}, fmt.Errorf("epoch %d of version %d", n[1], n[2])
	}
	rec := lease.Record{Holder: n[0], Epoch: n[1], Version: n[2]}
	if len(f) >= 4 {
		ttl, err := lease.TTLFromMillis(n[3])
		if err != nil {
			return lease.Record{}, err
		}
		rec.TTL = ttl
	}
	if len(f) == 5 {
		if n[4] == 0 {
			return lease.Record{}, errors.New("nonce 0")
		}
		rec.Nonce = uint64(n[4])
	}
	return rec, nil
}

// statedLease is the lease and the nonce the lease key's value says
// version stated: "VERSION LEASE_MS [NONCE]" of that very version; 0 for
// what it says nothing of (another version's, none, or what no leaselab
// writes).
func statedLease(val string, version int64) (time.Duration, uint64) {
	f := strings.Split(val, " ")
	if len(f) < 2 || len(f) > 3 {
		return 0, 0
	}
	if n, err := strconv.ParseInt(f[0], 10, 64); err != nil || n != version {
		return 0, 0
	}
	var ttl time.Duration
	if m, err := strconv.ParseInt(f[1], 10, 64); err == nil {
		ttl, _ = lease.TTLFromMillis(m)
	}
	var nonce uint64
	if len(f) == 3 {
		nonce, _ = strconv.ParseUint(f[2], 10, 64)
	}
	return ttl, nonce
}

// createAnswer reads createScript's answer: three integers and, after a
// record that went without a release, its nonce as a string ("" or
// missing: not known).
func createAnswer(raw []any, res *[3]int64, nonce, life *uint64) error {
	if len(raw) < 3 || len(raw) > 5 {
		return fmt.Errorf("the create script answered %v", raw)
	}
	for i := range 3 {
		n, ok := raw[i].(int64)
		if !ok {
			return fmt.Errorf("the create script answered %v", raw)
		}
		res[i] = n
	}
	if len(raw) >= 4 {
		if s, ok := raw[3].(string); ok && s != "" {
			*nonce, _ = strconv.ParseUint(s, 10, 64)
		}
	}
	if len(raw) == 5 {
		*life = lifeOf(raw[4])
	}
	return nil
}

// lifeOf is the incarnation a script answered or MGET read: 0 (not
// known) for none and for what no leaselab writes, which names no life.
func lifeOf(v any) uint64 {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0
	}
	return n
}

// writeAnswer is the write script's answer: the new version and the
// incarnation, or a version of 0 (a conflict) or -2 (ErrNoVersionLeft).
func writeAnswer(raw any) (int64, uint64, error) {
	switch r := raw.(type) {
	case int64:
		return r, 0, nil
	case []any:
		if len(r) == 2 {
			if v, ok := r[0].(int64); ok {
				return v, lifeOf(r[1]), nil
			}
		}
	}
	return 0, 0, fmt.Errorf("the write script answered %v", raw)
}

// newLife is a fresh incarnation, drawn as a nonce is: random, not 0.
func newLife() string { return strconv.FormatUint(lease.NewNonce(), 10) }
