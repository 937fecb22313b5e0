-- ADD: KEYS pending, active; ARGV msg_id, class, pending_ttl_s, stale_ms
-- -> {0} coalesced | {1} pending-while-running | {2, msg_id, class} publish
local now = now_ms()
local cls = tonumber(ARGV[2])
local active = redis.call('EXISTS', KEYS[2]) == 1
local cur = redis.call('GET', KEYS[1])
if cur then
  local id, ts, pcls, q = parse(cur)
  if active then
    if cls < pcls then  -- remember the higher class so the holder's re-publish uses it
      redis.call('SET', KEYS[1], mark(id, ts, cls, q), 'KEEPTTL')
    end
    return {0}
  end
  if q == '1' and cls >= pcls and now - ts <= tonumber(ARGV[4]) then
    return {0}
  end
  -- otherwise re-arm: the holder died owing a run (q=0), the queued message looks lost (stale),
  -- or this event outranks the queued resync message (priority inversion, notes 3.4 point 8)
end
if active then
  redis.call('SET', KEYS[1], mark(ARGV[1], now, cls, '0'), 'EX', ARGV[3])
  return {1}
end
redis.call('SET', KEYS[1], mark(ARGV[1], now, cls, '1'), 'EX', ARGV[3])
return {2, ARGV[1], cls}
