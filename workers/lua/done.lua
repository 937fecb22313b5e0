-- DONE: KEYS pending, active, leases, selfwrites, deferred[, also_delete...];
-- ARGV token, new_msg_id, key, pending_ttl_s, cached, record_ttl_ms, dirty, write ids...
-- -> {code, msg_id, class, deferred, foreign}: code 0 the lease is someone else's | 1 nothing owed |
--    2 publish one more run (msg_id, class); deferred/foreign: watch events deferred to this run, and how many of
--    them were not its own writes.
-- First the run's own writes (workers/own_writes.py): its write ids are recorded, so their late events are skipped;
-- the events deferred to it are judged: one that is not its own write is someone else's change, and the key is
-- owed one more run. In the same script as the release, so no event falls between the two.
-- also_delete (after a successful run: the key's backoff counter, its logged-error memory) is deleted here too.
-- cached (after a successful run: the object's hash in the shared cache) gets field 'clean' = the version the
-- cache holds now: the periodic sweeps skip an object whose version has not moved since. dirty (after a run whose
-- retry is a countdown message, which the gate does not record: the same hash) loses its 'clean' field, so that a
-- sweep runs the object again should that message be lost with its worker or with Redis.
if ARGV[7] ~= '' then
  redis.call('HDEL', ARGV[7], 'clean')
end
-- one command per question: pending, active, the deferred events and the own-write records together; the run's
-- writes recorded; one DEL for every key this step clears (every command here runs once per run)
local state = redis.call('MGET', KEYS[1], KEYS[2], KEYS[5], KEYS[4])
local cur, a = state[1], state[2]
local known
if #ARGV >= 8 then
  known = record(KEYS[4], state[4], {unpack(ARGV, 8)}, ARGV[6])
else
  known = select(2, ids_of(state[4]))
end
local deferred = ids_of(state[3])
local foreign = 0
for _, id in ipairs(deferred) do
  if not known[id] then
    foreign = foreign + 1
  end
end
local mine = not a or a == ARGV[1]
local clear = {KEYS[5]}  -- even when MGET saw no string there (an older release kept a SET): DEL is sent anyway
for i = 6, #KEYS do
  table.insert(clear, KEYS[i])
end
if a and mine then
  table.insert(clear, KEYS[2])
end
redis.call('DEL', unpack(clear))
if foreign > 0 and not cur then
  cur = mark(ARGV[2], now_ms(), 0, '0')
  redis.call('SET', KEYS[1], cur, 'EX', ARGV[4])
end
if not mine then
  return {0, '', 0, #deferred, foreign}
end
if ARGV[5] ~= '' then
  local rv = redis.call('HGET', ARGV[5], 'rv')
  if rv then
    redis.call('HSET', ARGV[5], 'clean', rv)
  end
end
redis.call('ZREM', KEYS[3], ARGV[3])
if not cur then
  return {1, '', 0, #deferred, foreign}
end
local _, _, cls, q = parse(cur)
if q == '1' then  -- our lease lapsed and a message was queued meanwhile
  return {1, '', 0, #deferred, foreign}
end
redis.call('SET', KEYS[1], mark(ARGV[2], now_ms(), cls, '1'), 'EX', ARGV[4])
return {2, ARGV[2], cls, #deferred, foreign}
