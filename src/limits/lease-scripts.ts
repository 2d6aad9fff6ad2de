import { COMMON, WINDOWS } from './redis-scripts.js';

/*
 * The lease script (docs/limits.md, "Exact and lease mode"): one atomic call per scope
 * renewal that returns an instance's previous lease of a scope and grants the next.
 *
 * A lease reserves in the same keys the exact admit script counts, so exact and lease
 * admissions of a scope see each other:
 *   <base>:rql  ZSET "<lease id>:<requests>"  score grant time  (leaves with the rpm window)
 *   <base>:tk   ZSET "<lease id>:<tokens>"    score grant time  (the tpm window, as a request)
 *   <base>:ccl  ZSET "<lease id>:<slots>"     score expiry      (grant + lease TTL)
 *   <base>:bh   ZSET "<lease id>:<micro-USD>" score expiry      (a budget hold, as a request's)
 * An instance that dies holding a lease loses it: slots and budget after the lease TTL,
 * requests and tokens with the window (they count as used).
 *
 * Returning a lease writes what it was used for: the requests and tokens used stay in
 * the window at the grant time; the settled cost goes to the spend of the lease's period;
 * the requests still in flight become ordinary holds (their slot, their token entry and
 * their budget hold under their own hold id), settled later by the settle script.
 * A marker key makes a return run once, whatever retries follow a lost reply.
 *
 * ARGV (one argument, joined by newlines): 1 clock override, 2 instance id, 3 instances
 * key, 4 window ms, 5 hold TTL ms, 6 lease TTL ms, 7 scope count; then per scope 21
 * fields: base, rpm, tpm, conc, budget micros, period, mode ('' auto | 'lease'),
 * grant '1'|'0', new lease id, old lease id ('' none), old grant time, old requests
 * granted, requests used, tokens granted, tokens settled, slots granted, micro-USD
 * granted, micro-USD settled, old spend key, at least these tokens and micro-USD (the
 * bounds of the request that asked: a share below one request would never serve one);
 * then the in-flight count m and m × 4:
 * hold id, tokens, slot '1'|'', cost ('' = none).
 * Returns {instances, then per scope LEASE_FIELDS numbers}: status (1 granted, 0 none
 * left, 2 auto chose exact, 3 budget spend not seeded, 4 not asked), now, requests,
 * requests used after, oldest request, tokens, tokens used after, oldest token entry,
 * slots, micro-USD, budget period start.
 */
export const LEASE_SCRIPT = `${COMMON}${WINDOWS}
local now = now_ms()
local instance, instances_key = ARGV[2], ARGV[3]
local window, hold_ttl, lease_ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local count = tonumber(ARGV[7])
local window_ttl, hold_key_ttl = window + 1000, hold_ttl + 60000

-- Adds an amount entry to a set with a running total (the total is rebuilt from the set when missing).
local function add_amount(z, member, score, amt, ttl)
  redis.call('ZADD', z, score, member)
  redis.call('PEXPIRE', z, ttl)
  if redis.call('EXISTS', z .. ':sum') == 1 then
    redis.call('INCRBY', z .. ':sum', amt)
    redis.call('PEXPIRE', z .. ':sum', ttl)
  end
end

-- Removes an amount entry; true when it was there.
local function remove_amount(z, member, amt)
  if redis.call('ZREM', z, member) == 1 then
    if redis.call('EXISTS', z .. ':sum') == 1 then redis.call('DECRBY', z .. ':sum', amt) end
    return true
  end
  return false
end

redis.call('ZADD', instances_key, now + 30000, instance)
redis.call('ZREMRANGEBYSCORE', instances_key, '-inf', now)
redis.call('PEXPIRE', instances_key, 60000)
local n = redis.call('ZCARD', instances_key)
local out = {n}
local a = 8
for i = 1, count do
  local base, rpm, tpm, conc = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local budget, period, mode, grant = tonumber(ARGV[a + 4]), ARGV[a + 5], ARGV[a + 6], ARGV[a + 7] == '1'
  local new_id, old_id, old_at = ARGV[a + 8], ARGV[a + 9], tonumber(ARGV[a + 10])
  local rq_granted, rq_used = tonumber(ARGV[a + 11]) or 0, tonumber(ARGV[a + 12]) or 0
  local tk_granted, tk_settled = tonumber(ARGV[a + 13]) or 0, tonumber(ARGV[a + 14]) or 0
  local cc_granted = tonumber(ARGV[a + 15]) or 0
  local b_granted, b_spent, spend_key = tonumber(ARGV[a + 16]) or 0, tonumber(ARGV[a + 17]) or 0, ARGV[a + 18]
  local min_tk, min_b = tonumber(ARGV[a + 19]) or 0, tonumber(ARGV[a + 20]) or 0
  local m = tonumber(ARGV[a + 21])
  local flights = a + 22
  a = flights + m * 4

  -- 1. Return the previous lease, once.
  if old_id ~= '' and redis.call('SET', base .. ':lr:' .. old_id, 1, 'NX', 'PX', hold_key_ttl) then
    local in_window = old_at > now - window
    if rq_granted > 0 and remove_amount(base .. ':rql', old_id .. ':' .. rq_granted, rq_granted) and rq_used > 0 and in_window then
      add_amount(base .. ':rql', old_id .. ':u' .. ':' .. rq_used, old_at, rq_used, window_ttl)
    end
    local tk_live = tk_granted > 0 and remove_amount(base .. ':tk', old_id .. ':' .. tk_granted, tk_granted) and in_window
    if tk_live and tk_settled > 0 then add_amount(base .. ':tk', old_id .. ':u' .. ':' .. tk_settled, old_at, tk_settled, window_ttl) end
    if cc_granted > 0 then remove_amount(base .. ':ccl', old_id .. ':' .. cc_granted, cc_granted) end
    if b_granted > 0 then
      remove_amount(base .. ':bh', old_id .. ':' .. b_granted, b_granted)
      if b_spent > 0 and spend_key ~= '' and redis.call('EXISTS', spend_key) == 1 then redis.call('INCRBY', spend_key, b_spent) end
    end
    for f = flights, flights + (m - 1) * 4, 4 do
      local hold, tokens, slot, cost = ARGV[f], tonumber(ARGV[f + 1]), ARGV[f + 2] == '1', tonumber(ARGV[f + 3])
      if tokens and tk_live then add_amount(base .. ':tk', hold .. ':' .. tokens, old_at, tokens, window_ttl) end
      if slot then
        redis.call('ZADD', base .. ':cc', now + hold_ttl, hold)
        redis.call('PEXPIRE', base .. ':cc', hold_key_ttl)
      end
      if cost then add_amount(base .. ':bh', hold .. ':' .. cost, now + hold_ttl, cost, hold_key_ttl) end
    end
  end

  -- 2. Grant the next: a share of what is left of each limit, all or nothing.
  local r = {4, now, 0, 0, NA, 0, 0, NA, 0, 0, 0}
  if grant then
    local share = function(limit)
      if limit == 0 then return 0 end
      return math.max(1, math.floor(limit / (100 * n)))
    end
    local status = 1
    -- The mode rule (wantsLease in lease.ts), with the instance count read just now.
    if mode == '' and not ((rpm or conc) and (not rpm or rpm >= 1000 * n) and (not conc or conc >= 1000 * n)) then status = 2 end
    local want = {}
    if status == 1 and rpm then
      local z = base .. ':rq'
      redis.call('ZREMRANGEBYSCORE', z, '-inf', now - window)
      local used = redis.call('ZCARD', z) + leased_total(base .. ':rql', now - window, window_ttl)
      want.rq = math.min(share(rpm), rpm - used)
      r[4], r[5] = used + math.max(want.rq, 0), oldest_of(oldest(z), oldest(base .. ':rql'))
      if want.rq <= 0 then status = 0 end
    end
    if status == 1 and tpm then
      local z = base .. ':tk'
      local used = pruned_total(z, z .. ':sum', now - window, window_ttl)
      want.tk = math.min(math.max(share(tpm), min_tk), tpm - used)
      r[7], r[8] = used + math.max(want.tk, 0), oldest(z)
      if want.tk <= 0 then status = 0 end
    end
    if status == 1 and conc then
      redis.call('ZREMRANGEBYSCORE', base .. ':cc', '-inf', now)
      local used = redis.call('ZCARD', base .. ':cc') + leased_total(base .. ':ccl', now, hold_key_ttl)
      want.cc = math.min(share(conc), conc - used)
      if want.cc <= 0 then status = 0 end
    end
    if status == 1 and budget then
      local z = base .. ':bh'
      local held = pruned_total(z, z .. ':sum', now, hold_key_ttl)
      local ps = period_bounds(period, now)
      r[11] = ps
      local spent = redis.call('GET', base .. ':sp:' .. period .. ':' .. ps)
      if not spent then status = 3 else
        want.b = math.min(math.max(share(budget), min_b), budget - tonumber(spent) - held)
        if want.b <= 0 then status = 0 end
      end
    end
    r[1] = status
    if status == 1 then
      if want.rq then r[3] = want.rq; add_amount(base .. ':rql', new_id .. ':' .. want.rq, now, want.rq, window_ttl) end
      if want.tk then r[6] = want.tk; add_amount(base .. ':tk', new_id .. ':' .. want.tk, now, want.tk, window_ttl) end
      if want.cc then r[9] = want.cc; add_amount(base .. ':ccl', new_id .. ':' .. want.cc, now + lease_ttl, want.cc, hold_key_ttl) end
      if want.b then r[10] = want.b; add_amount(base .. ':bh', new_id .. ':' .. want.b, now + lease_ttl, want.b, hold_key_ttl) end
    end
  end
  for _, v in ipairs(r) do out[#out + 1] = v end
end
return out
`;

/** Numbers per scope in the lease script's reply, after the instance count. */
export const LEASE_FIELDS = 11;
