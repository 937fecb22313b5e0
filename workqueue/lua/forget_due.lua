-- FORGET DUE: KEYS due; ARGV now (epoch seconds), keys... -> how many were removed
-- After their ADDs: a key whose deadline moved past ``now`` meanwhile stays for its new time.
local removed = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[1]) then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
