-- uses: workqueue/queue
-- REAP: leases whose deadline passed: the holder died (SIGKILL, node loss) without DONE. Its run never finished, so
-- the key is owed a run: mark pending (queued) and return it for publishing. KEYS and ARGV: ``REAP`` in
-- workqueue/queue.py; the Redis keys of each work key found are made from the layouts it is given (``string.format``
-- of the work key).
-- -> {{key, msg_id, class}, ...}
local now = now_ms()
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for i, key in ipairs(expired) do
  local pending, active = string.format(ARGV[4], key), string.format(ARGV[5], key)
  local pttl = redis.call('PTTL', active)
  if pttl > 0 then
    redis.call('ZADD', KEYS[1], now + pttl, key)  -- renewed meanwhile: keep watching
  else
    redis.call('ZREM', KEYS[1], key)
    local cur = redis.call('GET', pending)
    local q = nil
    local cls = 0
    if cur then
      local _, _, c, qq = parse(cur)
      q = qq
      cls = c
    end
    if q ~= '1' and q ~= '2' then  -- a queued message, or the delaying queue, will run it
      local id = ARGV[3] .. ':' .. i
      redis.call('SET', pending, mark(id, now, cls, '1'), 'EX', ARGV[2])
      table.insert(out, {key, id, cls})
    end
  end
end
return out
