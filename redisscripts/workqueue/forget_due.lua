-- FORGET DUE, after the ADDs of the keys whose time came: a key whose time moved past ``now`` meanwhile stays for its
-- new time. KEYS and ARGV: ``FORGET_DUE`` in workqueue/delaying.py. -> how many were removed
local removed = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[1]) then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
