-- MARK CLEAN: a successful run's record that the object is reconciled at the version the cache holds at the run's end,
-- by a run that still holds the key (one that lost it may overlap a run that sees more). KEYS and ARGV: ``MARK_CLEAN``
-- in engine/sweeps.py. -> the version recorded | false (the lease is lost)
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return false
end
local rv = redis.call('HGET', KEYS[1], 'rv')
if rv then
  redis.call('HSET', KEYS[1], 'clean', rv, 'refresh', ARGV[2])
end
return rv
