"""The Lua scripts of the Redis store (`redis_state`), each atomic on one thread's slot.

Every script declares the thread's keys it is routed by in KEYS (Redis Cluster sends a
script to the slot of its keys); the keys it builds from them carry the same hash tag.
"""

from __future__ import annotations

__all__ = [
    "ACQUIRE_LEASE",
    "CLAIM",
    "DROP",
    "LEASE_OWNED",
    "PUT_ABSENT",
    "TOUCH",
    "UPDATE_SESSION",
]

# KEYS: the thread's fixed keys (`redis_state._FIXED`: meta, approved, grants, pendings,
# ids, sessions, calls), all under one hash tag (one slot); the per-session and per-approval keys
# are built from KEYS[1]'s base and carry the same tag, so the script touches one slot only
# (Redis Cluster routes it by KEYS[1]). ARGV: generation, ttl_ms, create (1/0). Returns the
# generation or nil.
TOUCH = """
local base = string.sub(KEYS[1], 1, -5)
local g = redis.call('GET', KEYS[1])
if not g then
  if ARGV[3] == '0' then return false end
  -- A new thread: nothing of an earlier one with the same id may survive.
  for _, sid in ipairs(redis.call('SMEMBERS', KEYS[6])) do
    redis.call('DEL', base .. 'sess:' .. sid)
  end
  for _, aid in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    redis.call('DEL', base .. 'pending:' .. aid)
  end
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[7])) do
    redis.call('DEL', base .. 'call:' .. key)
  end
  for i = 2, #KEYS do
    redis.call('DEL', KEYS[i])
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
for _, sid in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  redis.call('PEXPIRE', base .. 'sess:' .. sid, ARGV[2])
end
return g
"""

# KEYS: the session record, the thread's `sessions` and `ids` sets. ARGV: session id, record
# JSON, ttl_ms. Stores the record only when absent (re-publication after a data loss must
# not overwrite one a poll wrote since). Returns 1 when stored.
PUT_ABSENT = """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  return 1
end
return 0
"""

# KEYS: lease key, session key (one thread: one slot). ARGV: token, expected consumed_seq,
# record JSON, ttl_ms. 1 = stored; 0 = the lease is not ours; -1 = the record is gone or was
# advanced by another.
UPDATE_SESSION = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local current = redis.call('GET', KEYS[2])
if not current then return -1 end
if tonumber(cjson.decode(current)['consumed_seq']) ~= tonumber(ARGV[2]) then return -1 end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1
"""

# KEYS: lease key (its queue keys share its hash tag). ARGV: token, ttl_ms, waiter_ttl_ms.
# Takes a free lease unless an earlier
# waiter is still waiting (first come, first served: a poll that just released cannot
# starve another that waits); otherwise queues the token. A waiter that stops retrying
# (gone, or gave up) drops out after waiter_ttl_ms. 1 = taken, 0 = queued.
ACQUIRE_LEASE = """
local lease, token = KEYS[1], ARGV[1]
local queue = lease .. ':queue'
local blocked = redis.call('EXISTS', lease) == 1
if not blocked then
  while true do
    local first = redis.call('ZRANGE', queue, 0, 0)[1]
    if (not first) or first == token then break end
    if redis.call('EXISTS', queue .. ':' .. first) == 1 then
      blocked = true
      break
    end
    redis.call('ZREM', queue, first)
  end
end
if blocked then
  if not redis.call('ZSCORE', queue, token) then
    redis.call('ZADD', queue, redis.call('INCR', queue .. ':n'), token)
  end
  redis.call('SET', queue .. ':' .. token, '1', 'PX', ARGV[3])
  redis.call('PEXPIRE', queue, ARGV[2])
  redis.call('PEXPIRE', queue .. ':n', ARGV[2])
  return 0
end
redis.call('ZREM', queue, token)
redis.call('DEL', queue .. ':' .. token)
redis.call('SET', lease, token, 'PX', ARGV[2])
return 1
"""

# KEYS: lease key. ARGV: token, ttl_ms (0 = release). Acts only on a lease the token holds.
LEASE_OWNED = """
if ARGV[2] == '0' then
  -- Releasing also leaves the queue (a waiter that gives up).
  redis.call('ZREM', KEYS[1] .. ':queue', ARGV[1])
  redis.call('DEL', KEYS[1] .. ':queue:' .. ARGV[1])
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then return redis.call('DEL', KEYS[1]) end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS: a call record, the thread's `calls` index. ARGV: record JSON, ttl_ms, the record's
# key in the index, the thread ttl_ms. Stores it when absent (returns nil), else returns the
# record there: one claimant wins on every replica.
CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return false
end
return redis.call('GET', KEYS[1])
"""

# KEYS: the thread's fixed keys (as TOUCH). ARGV: generation, thread ttl_ms, min_idle_ms,
# force (1/0). Deletes every key of the thread — its fixed keys and the session records,
# leases (and their queues), pending records and call records they index. Unless forced
# (EndThread), only a thread idle everywhere: still of `generation` (or gone), untouched by
# any replica for min_idle_ms (its TTL is refreshed on every use, so the time since the last
# use anywhere is ttl_ms - PTTL), with no session record, no live pending approval (a parked
# call's record lives as long as its pending one) and no running call. 1 = deleted, 0 = kept (another replica may be using it).
DROP = """
local base = string.sub(KEYS[1], 1, -5)
if ARGV[4] ~= '1' then
  local g = redis.call('GET', KEYS[1])
  if g and g ~= ARGV[1] then return 0 end
  if g then
    local left = redis.call('PTTL', KEYS[1])
    if left > 0 and tonumber(ARGV[2]) - left < tonumber(ARGV[3]) then return 0 end
  end
  if redis.call('SCARD', KEYS[6]) > 0 then return 0 end
  for _, aid in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    if redis.call('EXISTS', base .. 'pending:' .. aid) == 1 then return 0 end
  end
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[7])) do
    local record = redis.call('GET', base .. 'call:' .. key)
    if record and string.find(record, '"state":"running"', 1, true) then return 0 end
  end
end
local function drop_lease(sid)
  local lease = base .. 'lease:' .. sid
  redis.call('DEL', lease, lease .. ':queue', lease .. ':queue:n')
end
for _, sid in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  redis.call('DEL', base .. 'sess:' .. sid)
  drop_lease(sid)
end
for _, sid in ipairs(redis.call('SMEMBERS', KEYS[5])) do drop_lease(sid) end
for _, aid in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  redis.call('DEL', base .. 'pending:' .. aid)
end
for _, key in ipairs(redis.call('SMEMBERS', KEYS[7])) do
  redis.call('DEL', base .. 'call:' .. key)
end
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""
