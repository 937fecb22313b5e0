-- RESERVE: the first of the candidate handles that no other claim holds, for this claim. KEYS and ARGV: ``RESERVE`` in
-- cache/handle_index.py (the keys come as arguments: the handles' are only known here; not for Redis Cluster).
-- -> {'wait'} | {'capped'} | {'ok', doc, member, passed...} | {'none', passed...}; doc: the reserved handle as the
-- cache holds it ('' when it has none), so the claim need not read it in a round trip of its own; passed: the members
-- before it that are bound or held by another claim, which the caller's snapshot can forget. Under a cap, what the
-- namespace holds is its bound handles and the handles its claims reserved that the index still shows unbound: two
-- claims of one namespace binding at once cannot both pass the cap while the watcher has seen neither bind.
if ARGV[7] ~= '' then
  if tonumber(ARGV[7]) > redis.call('HLEN', ARGV[5]) then return {'wait'} end
else
  local waiting = redis.call('ZCARD', ARGV[4])
  if waiting > 0 then
    local rank = redis.call('ZRANK', ARGV[4], ARGV[3])
    if not rank then rank = waiting end
    if rank >= redis.call('HLEN', ARGV[5]) then return {'wait'} end
  end
end
local now = nil
if ARGV[8] ~= '' then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', ARGV[10], '-inf', now)
  local held = redis.call('ZCARD', ARGV[9])
  for _, member in ipairs(redis.call('ZRANGE', ARGV[10], 0, -1)) do
    -- reserved and still unbound as the index shows it: a bind on its way (once the watcher sees the bind, the
    -- handle leaves the unbound hash and joins the bound zset in one write; a handle deleted since is in neither)
    if redis.call('HEXISTS', ARGV[5], member) == 1 then held = held + 1 end
  end
  if held >= tonumber(ARGV[8]) then return {'capped'} end
end
local passed = {}
for i = 11, #ARGV do
  if redis.call('HEXISTS', ARGV[5], ARGV[i]) == 1 then
    -- one command: take the reservation if it is free, and learn who holds it otherwise
    local owner = redis.call('SET', ARGV[1] .. ARGV[i], ARGV[3], 'NX', 'PX', ARGV[2], 'GET')
    if not owner or owner == ARGV[3] then
      if now then
        redis.call('ZADD', ARGV[10], now + tonumber(ARGV[2]), ARGV[i])
        redis.call('PEXPIRE', ARGV[10], ARGV[2])
      end
      local doc = redis.call('HGET', ARGV[6] .. ARGV[i], 'doc') or ''
      return {'ok', doc, ARGV[i], unpack(passed)}
    end
  end
  table.insert(passed, ARGV[i])
end
return {'none', unpack(passed)}
