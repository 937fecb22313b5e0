-- RELEASE: give a reservation up, if this claim still holds it. KEYS and ARGV: ``RELEASE`` in cache/handle_index.py.
-- -> 1 released | 0 not this claim's
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return redis.call('DEL', KEYS[1])
end
return 0
