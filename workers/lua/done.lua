-- DONE: KEYS pending, active, leases[, also_delete...]; ARGV token, new_msg_id, key, pending_ttl_s[, cached]
-- -> {0} lease is someone else's | {1} nothing owed | {2, msg_id, class} publish one more run
-- also_delete (after a successful run: the key's backoff counter, its logged-error memory) is deleted in the
-- same round trip. cached (after a successful run: the object's hash in the shared cache) gets field 'clean' =
-- the version the cache holds now: the periodic sweeps skip an object whose version has not moved since
if #KEYS >= 4 then
  redis.call('DEL', unpack(KEYS, 4))
end
local a = redis.call('GET', KEYS[2])
if a and a ~= ARGV[1] then
  return {0}
end
if ARGV[5] and ARGV[5] ~= '' then
  local rv = redis.call('HGET', ARGV[5], 'rv')
  if rv then
    redis.call('HSET', ARGV[5], 'clean', rv)
  end
end
if a then
  redis.call('DEL', KEYS[2])
end
redis.call('ZREM', KEYS[3], ARGV[3])
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {1}
end
local _, _, cls, q = parse(cur)
if q == '1' then  -- our lease lapsed and a message was queued meanwhile
  return {1}
end
redis.call('SET', KEYS[1], mark(ARGV[2], now_ms(), cls, '1'), 'EX', ARGV[4])
return {2, ARGV[2], cls}
