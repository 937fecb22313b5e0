-- uses: workqueue/queue
-- START: take the key's lease. KEYS and ARGV: ``START`` in workqueue/queue.py.
-- -> {1, waited_ms or -1} run | {0} busy (the holder, or the lease reaper, will re-publish)
local now = clock(ARGV[6])
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local cur = redis.call('GETDEL', KEYS[1])
  local waited = -1
  if cur then
    local _, ts = parse(cur)
    waited = now - ts
  end
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[3])
  return {1, waited}
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local id, ts, cls, q = parse(cur)
  if q ~= '2' then  -- a held mark stays the delaying queue's to publish
    redis.call('SET', KEYS[1], mark(id, ts, cls, '0'), 'KEEPTTL')
  end
else
  redis.call('SET', KEYS[1], mark(ARGV[5], now, 0, '0'), 'EX', ARGV[4])
end
return {0}
