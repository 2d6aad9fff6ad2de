/*
 * The Redis driver's two Lua scripts. Each runs atomically over every scope of a request,
 * so a check and its reservation are one operation across all gateway instances, on one
 * clock: Redis TIME (ARGV[1] replaces it only in tests).
 *
 * Keys, for a scope whose base is `<prefix><scope id>`:
 *   <base>:rq          ZSET rpm window: member hold id, score admit time (ms)
 *   <base>:tk          ZSET tpm window: member "<hold id>:<tokens>", score admit time
 *   <base>:tk:sum      running total of the tokens in <base>:tk
 *   <base>:cc          ZSET concurrency slots: member hold id, score expiry
 *   <base>:bh          ZSET budget holds: member "<hold id>:<micro-USD>", score expiry
 *   <base>:bh:sum      running total of the amounts in <base>:bh
 *   <base>:sp:<period>:<period start ms>   settled spend of that budget period (micro-USD)
 *   <base>:rql, <base>:ccl (+ :sum)  requests and slots leased by instances (lease-scripts.ts):
 *                      member "<lease id>:<amount>", score grant time (rql) or expiry (ccl)
 * Windows are pruned from their old end on each use; a running total is decreased by the
 * entries that leave, so no call re-sums a window. Every key has a TTL.
 *
 * The ARGV each script documents is sent as one argument, its values joined by newlines.
 *
 * Keys are built inside the scripts (the spend key depends on Redis TIME), so this runs on
 * a single Redis server (or a primary with replicas), not a Redis Cluster.
 */

export const COMMON = `
-- The arguments come as one, joined by newlines (empty values kept): split into the ARGV the script reads.
local function split_args(s)
  local out, from = {}, 1
  while true do
    local at = string.find(s, '\\n', from, true)
    if not at then
      out[#out + 1] = string.sub(s, from)
      return out
    end
    out[#out + 1] = string.sub(s, from, at - 1)
    from = at + 1
  end
end
local ARGV = split_args(ARGV[1])

local NA = -1
local NEVER = -2
local DAY = 86400000

local function now_ms()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function amount(member)
  return tonumber(string.match(member, ':(%d+)$')) or 0
end
`;

/** Window, lease-set and period helpers the admit and lease scripts share. */
export const WINDOWS = `
local function oldest(z)
  local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return NA
end

-- Drops members scored <= cutoff, subtracting them from the running total. A total that
-- is missing (first use, or evicted) is rebuilt once from the set.
local function pruned_total(z, total_key, cutoff, ttl)
  local total = redis.call('GET', total_key)
  if not total then
    redis.call('ZREMRANGEBYSCORE', z, '-inf', cutoff)
    local sum = 0
    for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do sum = sum + amount(m) end
    if redis.call('EXISTS', z) == 1 then redis.call('SET', total_key, sum, 'PX', ttl) end
    return sum
  end
  total = tonumber(total)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', cutoff)
  if #gone > 0 then
    for _, m in ipairs(gone) do total = total - amount(m) end
    redis.call('ZREMRANGEBYSCORE', z, '-inf', cutoff)
    redis.call('SET', total_key, total, 'KEEPTTL')
  end
  return total
end

-- The total of a lease set (:rql, :ccl: amounts leased by instances, docs/limits.md "Exact
-- and lease mode"); one EXISTS when no instance leases the scope.
local function leased_total(z, cutoff, ttl)
  if redis.call('EXISTS', z) == 0 then return 0 end
  return pruned_total(z, z .. ':sum', cutoff, ttl)
end

local function oldest_of(a, b)
  if a == NA then return b end
  if b == NA or a < b then return a end
  return b
end

-- rpm wait when leases count too: the window's entries (one request each) and leases
-- (their amounts) in time order, until "need" requests have left.
local function mixed_wait(z, zl, need, window, now)
  local e = {}
  local a = redis.call('ZRANGE', z, 0, need - 1, 'WITHSCORES')
  for j = 1, #a, 2 do e[#e + 1] = {tonumber(a[j + 1]), 1} end
  local b = redis.call('ZRANGE', zl, 0, -1, 'WITHSCORES')
  for j = 1, #b, 2 do e[#e + 1] = {tonumber(b[j + 1]), amount(b[j])} end
  table.sort(e, function(x, y) return x[1] < y[1] end)
  local freed = 0
  for _, x in ipairs(e) do
    freed = freed + x[2]
    if freed >= need then return x[1] + window - now end
  end
  return NEVER
end

-- Proleptic Gregorian calendar from days since 1970-01-01 (H. Hinnant's algorithms).
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function year_month(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m
end

local function period_bounds(period, now)
  if period == 'total' then return 0, NA end
  local day = math.floor(now / DAY)
  if period == 'day' then return day * DAY, (day + 1) * DAY end
  local y, m = year_month(day)
  local ny, nm = y, m + 1
  if nm == 13 then ny, nm = y + 1, 1 end
  return days_from_civil(y, m, 1) * DAY, days_from_civil(ny, nm, 1) * DAY
end

`;

/**
 * Admit (or, with mode "peek", only read) a request against every scope.
 * ARGV: 1 clock override ('' = TIME), 2 mode 'admit'|'peek', 3 hold id, 4 tokens,
 * 5 cost (micro-USD), 6 window ms, 7 hold TTL ms, 8 TTL of a 'total' spend counter ms,
 * 9 scope count; then 7 per scope: base, rpm, tpm, max concurrent, budget micro-USD,
 * budget period, spend seed ('' = absent for each).
 * Returns {status, now, then 13 numbers per scope (see READING_FIELDS in redis.ts)};
 * status 1 admitted, 0 refused, 2 a budget's spend counter is missing (nothing changed:
 * seed it and call again with the seed), 3 peeked.
 */
export const ADMIT_SCRIPT = `${COMMON}${WINDOWS}
local now = now_ms()
local mode, hold = ARGV[2], ARGV[3]
local tokens, cost = tonumber(ARGV[4]), tonumber(ARGV[5])
local window, hold_ttl, total_ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local count = tonumber(ARGV[9])
local window_ttl, hold_key_ttl = window + 1000, hold_ttl + 60000
local out = {0, now}
local scopes = {}
local refused, unseeded = false, false

for i = 1, count do
  local a = 10 + (i - 1) * 7
  local s = { base = ARGV[a], rpm = tonumber(ARGV[a + 1]), tpm = tonumber(ARGV[a + 2]), conc = tonumber(ARGV[a + 3]),
              budget = tonumber(ARGV[a + 4]), period = ARGV[a + 5], seed = tonumber(ARGV[a + 6]) }
  local r = {NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA}
  if s.rpm then
    local z, zl = s.base .. ':rq', s.base .. ':rql'
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now - window)
    local leased = leased_total(zl, now - window, window_ttl)
    local own = redis.call('ZCARD', z)
    s.used_rq = own + leased
    r[1], r[2] = s.used_rq, oldest(z)
    if leased > 0 then r[2] = oldest_of(r[2], oldest(zl)) end
    if s.used_rq + 1 > s.rpm then
      refused = true
      if s.rpm == 0 then r[3] = NEVER
      elseif leased == 0 then
        local e = redis.call('ZRANGE', z, s.used_rq - s.rpm, s.used_rq - s.rpm, 'WITHSCORES')
        r[3] = tonumber(e[2]) + window - now
      else r[3] = mixed_wait(z, zl, s.used_rq + 1 - s.rpm, window, now) end
    end
  end
  if s.tpm then
    local z = s.base .. ':tk'
    s.used_tk = pruned_total(z, z .. ':sum', now - window, window_ttl)
    s.want = math.min(tokens, s.tpm)
    r[4], r[5] = s.used_tk, oldest(z)
    local need = s.used_tk + s.want - s.tpm
    if s.tpm == 0 then refused = true; r[6] = NEVER
    elseif need > 0 then
      refused = true
      r[6] = NEVER
      local entries = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
      local freed = 0
      for j = 1, #entries, 2 do
        freed = freed + amount(entries[j])
        if freed >= need then r[6] = tonumber(entries[j + 1]) + window - now; break end
      end
    end
  end
  if s.conc then
    local z = s.base .. ':cc'
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
    local used = redis.call('ZCARD', z) + leased_total(s.base .. ':ccl', now, hold_key_ttl)
    r[7] = used
    if used + 1 > s.conc then
      refused = true
      if s.conc == 0 then r[8] = NEVER else r[8] = 1000 end
    end
  end
  if s.budget then
    local z = s.base .. ':bh'
    s.held = pruned_total(z, z .. ':sum', now, hold_key_ttl)
    local ps, pe = period_bounds(s.period, now)
    s.spend_key = s.base .. ':sp:' .. s.period .. ':' .. ps
    if pe == NA then s.spend_ttl = total_ttl else s.spend_ttl = pe - now + hold_ttl + 3600000 end
    local spent = redis.call('GET', s.spend_key)
    if not spent and s.seed then
      -- The whole script is atomic, so of several instances seeding at once the first wins.
      redis.call('SET', s.spend_key, s.seed, 'NX', 'PX', s.spend_ttl)
      spent = redis.call('GET', s.spend_key)
    end
    r[10], r[12], r[13] = s.held, ps, pe
    if not spent then unseeded = true else
      spent = tonumber(spent)
      r[9] = spent
      if spent + s.held + cost > s.budget then
        refused = true
        if cost > s.budget then r[11] = NEVER
        elseif spent + cost <= s.budget then r[11] = 1000
        elseif pe == NA then r[11] = NEVER
        else r[11] = pe - now end
      end
    end
  end
  scopes[i] = s
  for _, v in ipairs(r) do out[#out + 1] = v end
end

-- A refusal needs no seed; a read or an admission does.
if unseeded and (mode == 'peek' or not refused) then out[1] = 2; return out end
if mode == 'peek' then out[1] = 3; return out end
if refused then out[1] = 0; return out end

for _, s in ipairs(scopes) do
  if s.rpm then
    redis.call('ZADD', s.base .. ':rq', now, hold)
    redis.call('PEXPIRE', s.base .. ':rq', window_ttl)
  end
  if s.tpm then
    local z = s.base .. ':tk'
    redis.call('ZADD', z, now, hold .. ':' .. s.want)
    redis.call('PEXPIRE', z, window_ttl)
    redis.call('SET', z .. ':sum', s.used_tk + s.want, 'PX', window_ttl)
  end
  if s.conc then
    redis.call('ZADD', s.base .. ':cc', now + hold_ttl, hold)
    redis.call('PEXPIRE', s.base .. ':cc', hold_key_ttl)
  end
  if s.budget then
    local z = s.base .. ':bh'
    redis.call('ZADD', z, now + hold_ttl, hold .. ':' .. cost)
    redis.call('PEXPIRE', z, hold_key_ttl)
    redis.call('SET', z .. ':sum', s.held + cost, 'PX', hold_key_ttl)
    redis.call('PEXPIRE', s.spend_key, s.spend_ttl)
  end
end
out[1] = 1
return out
`;

/**
 * Settle (or release: 0 tokens, 0 cost) one hold in every scope it reserved in. Safe to
 * run twice: each correction applies only while the hold's reservation is still there.
 * ARGV: 1 clock override, 2 hold id, 3 metered tokens, 4 metered cost, 5 charge the spend
 * even if the budget hold is gone (1 on a first attempt: the hold may have expired during
 * a long request; 0 on a replay whose first attempt may have run), 6 window ms,
 * 7 scope count; then 5 per scope: base, reserved tokens, slot ('1'), reserved cost,
 * spend key ('' = not reserved for each).
 */
export const SETTLE_SCRIPT = `${COMMON}
local now = now_ms()
local hold = ARGV[2]
local tokens, cost, charge_always = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1'
local window, count = tonumber(ARGV[6]), tonumber(ARGV[7])
for i = 1, count do
  local a = 8 + (i - 1) * 5
  local base, reserved_tokens, slot = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2] == '1'
  local reserved_cost, spend_key = tonumber(ARGV[a + 3]), ARGV[a + 4]
  if reserved_tokens then
    local z = base .. ':tk'
    local member = hold .. ':' .. reserved_tokens
    local score = redis.call('ZSCORE', z, member)
    -- Out of the window already: pruning subtracts what was added; nothing to correct.
    if score and tonumber(score) > now - window and tokens ~= reserved_tokens then
      -- Add before removing: a set that became empty would vanish and come back without its TTL.
      redis.call('ZADD', z, score, hold .. ':' .. tokens)
      redis.call('ZREM', z, member)
      if redis.call('EXISTS', z .. ':sum') == 1 then redis.call('INCRBY', z .. ':sum', tokens - reserved_tokens) end
    end
  end
  if slot then redis.call('ZREM', base .. ':cc', hold) end
  if reserved_cost then
    local z = base .. ':bh'
    local removed = redis.call('ZREM', z, hold .. ':' .. reserved_cost)
    if removed == 1 and redis.call('EXISTS', z .. ':sum') == 1 then redis.call('DECRBY', z .. ':sum', reserved_cost) end
    -- A missing counter (Redis restarted) is left missing: the next admit re-seeds it
    -- from the request log, which has this request's cost.
    if (removed == 1 or charge_always) and cost > 0 and redis.call('EXISTS', spend_key) == 1 then
      redis.call('INCRBY', spend_key, cost)
    end
  end
end
return 1
`;
